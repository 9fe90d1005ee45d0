"""The documentation holds together: every relative link and image of README.md and
docs/*.md reaches a file of the repository (and a heading of it, for a #anchor), README.md
stays a quick start that links every docs/ file, and its first screen has the two commands
and the CI wiring."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

import pytest

from tests.docs_text import ROOT, anchors, doc_names, doc_text, doc_tokens, github_slug

HTML_LINK = re.compile(r"""\b(?:src|href)\s*=\s*["']([^"']+)["']""")
README_MAX_LINES = 200
FIRST_SCREEN = 60


def links(name: str) -> list[str]:
    """Every link target of a file: Markdown links and images, and raw HTML's src and href;
    not what code spans or fenced blocks hold."""
    found = []

    def walk(tokens):
        for token in tokens:
            if token.type == "link_open":
                found.append(token.attrGet("href"))
            elif token.type == "image":
                found.append(token.attrGet("src"))
            elif token.type in ("html_block", "html_inline"):
                found.extend(HTML_LINK.findall(token.content))
            walk(token.children or [])

    walk(doc_tokens(name))
    return found


def relative(target: str) -> bool:
    parts = urlsplit(target)
    return not parts.scheme and not parts.netloc


def broken(name: str, target: str) -> str | None:
    """Why a relative link of ``name`` leads nowhere; None when it resolves."""
    parts = urlsplit(target)
    path = unquote(parts.path)
    file = (ROOT / PurePosixPath(name).parent / path) if path else ROOT / name
    if not file.resolve().is_relative_to(ROOT):
        return "outside the repository"
    if not file.exists():
        return "no such file"
    if parts.fragment:
        if file.suffix != ".md":
            return "an anchor into a file that is not Markdown"
        if parts.fragment not in anchors(str(file.relative_to(ROOT))):
            return f"no heading #{parts.fragment} in {file.relative_to(ROOT)}"
    return None


@pytest.mark.parametrize("name", doc_names())
def test_every_relative_link_resolves(name):
    targets = [t for t in links(name) if relative(t)]
    problems = [f"{name}: {t}: {why}" for t in targets if (why := broken(name, t))]
    assert not problems, "\n".join(problems)


def test_the_links_are_read():
    """The check sees the README's images (one Markdown, one HTML) and its anchored links."""
    found = links("README.md")
    assert {"docs/screenshot.png", "docs/screenshot-phone.png"} <= set(found)
    assert "docs/api.md#a-ci-job-with-curl" in found


@pytest.mark.parametrize(("target", "why"), [
    ("docs/nowhere.md", "no such file"),
    ("docs/api.md#no-such-heading", "no heading #no-such-heading in docs/api.md"),
    ("#no-such-heading", "no heading #no-such-heading in README.md"),
    ("docs/screenshot.png#x", "an anchor into a file that is not Markdown"),
    ("../../etc/passwd", "outside the repository"),
])
def test_a_broken_link_is_named(target, why):
    assert broken("README.md", target) == why


@pytest.mark.parametrize(("heading", "slug"), [
    ("Passive evidence: JUnit XML from every CI job",
     "passive-evidence-junit-xml-from-every-ci-job"),
    ("The flaky-tests page and the targets file", "the-flaky-tests-page-and-the-targets-file"),
    ("Sign-in through your identity provider", "sign-in-through-your-identity-provider"),
    ("The project's CI", "the-projects-ci"),
    ("A CI job with curl", "a-ci-job-with-curl"),
])
def test_github_slugs(heading, slug):
    assert github_slug(heading) == slug


def test_the_readme_is_a_quick_start():
    lines = doc_text("README.md").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"
    first_screen = "\n".join(lines[:FIRST_SCREEN])
    for words in ("## The two commands", "make run ", "make test ", "## Wire a CI job",
                  "### GitHub Actions"):
        assert words in first_screen, f"{words!r} is not in README.md's first screen"


def test_the_readme_links_every_doc():
    linked = {unquote(urlsplit(t).path) for t in links("README.md") if relative(t)}
    missing = [name for name in doc_names()[1:] if name not in linked]
    assert not missing, f"README.md does not link {missing}"
