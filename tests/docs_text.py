"""The documentation as the tests read it: README.md and docs/*.md, a fenced block between
two markers or under a heading, and the anchors GitHub gives a file's headings."""

from __future__ import annotations

import re
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

ROOT = Path(__file__).resolve().parents[1]
MARKDOWN = MarkdownIt("commonmark").enable("table")


def doc_names() -> list[str]:
    """README.md and every docs/*.md, as paths from the repository's top."""
    return ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]


def doc_text(name: str) -> str:
    """The text of a documentation file, named from the repository's top."""
    return (ROOT / name).read_text(encoding="utf-8")


def doc_tokens(name: str) -> list[Token]:
    return MARKDOWN.parse(doc_text(name))


def marked_block(name: str, marker: str) -> str:
    """The one fenced block between ``<!-- marker:start -->`` and ``<!-- marker:end -->``."""
    text = doc_text(name)
    between = text.split(f"<!-- {marker}:start -->")[1].split(f"<!-- {marker}:end -->")[0]
    fences = [t for t in MARKDOWN.parse(between) if t.type == "fence"]
    assert len(fences) == 1, f"{name}: {marker} holds {len(fences)} fenced blocks"
    return fences[0].content


def inline_text(inline: Token) -> str:
    """A heading's text as GitHub renders it: its words and code spans, no markup."""
    return "".join(child.content for child in inline.children or []
                   if child.type in ("text", "code_inline", "text_special"))


def fenced_blocks_under(name: str, heading: str) -> list[Token]:
    """The fenced blocks of the section under ``heading`` (the heading's text), up to the
    next heading of its level or higher."""
    tokens = doc_tokens(name)
    blocks, level = [], None
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            depth = int(token.tag[1])
            if level is not None and depth <= level:
                break
            if level is None and inline_text(tokens[i + 1]) == heading:
                level = depth
        elif token.type == "fence" and level is not None:
            blocks.append(token)
    assert level is not None, f"{name} has no heading {heading!r}"
    return blocks


def github_slug(text: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped but for hyphens (and
    the underscores of words), each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(name: str) -> set[str]:
    """The anchors of a file's headings; a repeated heading's get -1, -2, … as on GitHub."""
    tokens, seen = doc_tokens(name), {}
    found = set()
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            slug = github_slug(inline_text(tokens[i + 1]))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
    return found
