"""Reading what the CI client prints: its Markdown as a reader sees it, its GitHub workflow
commands as the runner parses them, and the client module itself, loaded from its file."""

from __future__ import annotations

import functools
import importlib.util
import re
from urllib.parse import unquote

from django.conf import settings
from markdown_it import MarkdownIt

CLIENT = settings.BASE_DIR / "client" / "flakeboard_ci.py"
COMMAND = re.compile(r"^::(?P<name>\w+)(?: (?P<props>[^:]*))?::(?P<message>.*)$")


@functools.cache
def _client_code(stamp: tuple[int, int]):
    """The client's code, compiled once a process for each state of its file (the stamp)."""
    return compile(CLIENT.read_bytes(), str(CLIENT), "exec", dont_inherit=True)


def load_client():
    """A fresh module of the CI client, as importing its file makes one: a test may change
    what it holds without touching another's."""
    spec = importlib.util.spec_from_file_location("flakeboard_ci_under_test", CLIENT)
    module = importlib.util.module_from_spec(spec)
    stat = CLIENT.stat()
    exec(_client_code((stat.st_mtime_ns, stat.st_size)), module.__dict__)  # noqa: S102
    return module


def _text(inline) -> str:
    return "".join(child.content for child in inline.children or []
                   if child.type in ("text", "text_special", "code_inline"))


def markdown_tables(source: str) -> list[list[list[str]]]:
    """Each table of the rendered Markdown: its body rows, each a list of cell texts."""
    tables, rows, row, in_body = [], None, None, False
    for token in MarkdownIt("commonmark").enable("table").parse(source):
        if token.type == "table_open":
            rows = []
        elif token.type == "tbody_open":
            in_body = True
        elif token.type == "tbody_close":
            in_body = False
        elif token.type == "table_close":
            tables.append(rows)
        elif in_body and token.type == "tr_open":
            row = []
            rows.append(row)
        elif in_body and token.type == "inline":
            row.append(_text(token))
    return tables


def first_paragraph(source: str) -> str:
    tokens = MarkdownIt("commonmark").enable("table").parse(source)
    return _text(next(token for token in tokens if token.type == "inline"))


def workflow_commands(stdout: str) -> list[tuple[str, dict[str, str], str]]:
    """The workflow commands in the output as GitHub's runner reads them: name, properties
    and message, unescaped."""
    def data(text):
        return unquote(text)  # %25, %0D, %0A, %3A, %2C are all percent-encoding

    commands = []
    for line in stdout.split("\n"):
        match = COMMAND.match(line)
        if match:
            props = {}
            for pair in filter(None, (match["props"] or "").split(",")):
                key, _, value = pair.partition("=")
                props[key] = data(value)
            commands.append((match["name"], props, data(match["message"])))
    return commands
