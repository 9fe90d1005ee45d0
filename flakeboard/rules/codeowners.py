"""CODEOWNERS: who owns a path, as GitHub reads the file (no Django).

Each line is a pattern and its owners (``@user``, ``@org/team`` or an e-mail); a pattern
with no owners leaves what it matches unowned. The **last** matching line wins. Patterns
follow gitignore, with GitHub's differences:

- a leading ``/``, or a ``/`` inside the pattern, anchors it to the repository's root;
  without one it matches at any depth (``*.js``, ``docs``);
- a trailing ``/`` matches a directory and everything under it (``apps/``, ``/build/logs/``);
- ``*`` and ``?`` never cross a ``/``; ``**`` does (``**/logs``, ``a/**/b``, ``a/**``);
- a pattern ending in ``/*`` matches the files directly in that directory, not deeper
  (``docs/*``), where gitignore would take the subdirectories too;
- a name that matches a directory also matches everything under it (``docs``);
- ``!`` negation and ``[...]`` ranges do not work on GitHub: they are refused here;
- ``\\#`` starts a pattern with ``#``, ``\\ `` puts a space in it; a ``#`` after a space
  starts a comment.

A node's path is its node id up to the first ``::`` (pytest's ``path/to/test_x.py::Class
::test``). Other producers' ids (``junit/nodeids.py``) may have none: no owner then.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

# GitHub ignores a CODEOWNERS file larger than this.
CODEOWNERS_MAX_BYTES = 3 * 1024 * 1024

_USER = r"@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_TEAM = _USER + r"/[A-Za-z0-9][A-Za-z0-9_.-]*"
_EMAIL = r"[^@\s]+@[^@\s]+\.[^@\s]+"
OWNER = re.compile(rf"(?:{_TEAM}|{_USER}|{_EMAIL})")
# A path's last part with a file suffix (``test_x.py``), or any path with a directory.
_FILE_NAME = re.compile(r"[^./\\][^./\\]*\.[A-Za-z0-9]{1,10}")


@dataclass(frozen=True)
class LineProblem:
    line: int
    message: str

    def __str__(self):
        return f"line {self.line}: {self.message}"


class CodeownersInvalid(ValueError):
    """The file is refused; each problem names its line (1-based)."""

    def __init__(self, problems: list[LineProblem]):
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))


@dataclass(frozen=True)
class CodeownersRule:
    pattern: str
    owners: tuple[str, ...]
    line: int
    regex: re.Pattern = field(repr=False, compare=False)

    def matches(self, path: str) -> bool:
        return self.regex.match(path) is not None


@dataclass(frozen=True)
class Codeowners:
    rules: tuple[CodeownersRule, ...] = ()

    def __len__(self) -> int:
        return len(self.rules)

    def rule_for(self, path: str) -> CodeownersRule | None:
        """The last rule whose pattern matches ``path`` (relative, ``/``-separated)."""
        path = path.lstrip("/")
        for rule in reversed(self.rules):
            if rule.matches(path):
                return rule
        return None

    def owners_for(self, path: str) -> tuple[str, ...]:
        rule = self.rule_for(path)
        return rule.owners if rule else ()

    def rule_for_node(self, nodeid: str) -> CodeownersRule | None:
        """The rule that decides a node's owners, from the path in its id: the node need
        not be known to the board. None for an id with no path."""
        path = node_path(nodeid)
        return self.rule_for(path) if path is not None else None

    def owners_of_node(self, nodeid: str) -> tuple[str, ...]:
        rule = self.rule_for_node(nodeid)
        return rule.owners if rule else ()

    @property
    def owners(self) -> list[str]:
        """Every owner the file names, once each, in order of first appearance."""
        return list(dict.fromkeys(owner for rule in self.rules for owner in rule.owners))


def node_path(nodeid: str) -> str | None:
    """The file a node id names: the part before the first ``::``, when it looks like a
    path (a directory in it, or a file suffix); else None (``com.acme.Test::name``)."""
    head = nodeid.split("::", 1)[0].replace("\\", "/").removeprefix("./")
    if not head or head.startswith("/") or ".." in head.split("/"):
        return None
    if "/" in head or _FILE_NAME.fullmatch(head):
        return head
    return None


def is_team(owner: str) -> bool:
    return owner.startswith("@") and "/" in owner


def owner_listed(owner: str, owners: tuple[str, ...]) -> bool:
    """``owner`` is among ``owners``; handles and e-mails compare without case, as on
    GitHub."""
    wanted = owner.strip().casefold()
    return any(wanted == listed.casefold() for listed in owners)


def _tokens(line: str) -> list[str]:
    """The line's words: ``\\`` escapes the next character (kept, for the pattern), and a
    ``#`` that begins a word begins a comment."""
    words, word, escaped = [], [], False
    for char in line:
        if escaped:
            word += ["\\", char]
            escaped = False
        elif char == "\\":
            escaped = True
        elif char.isspace():
            if word:
                words.append("".join(word))
                word = []
        elif char == "#" and not word:
            break
        else:
            word.append(char)
    if escaped:
        word.append("\\")
    if word:
        words.append("".join(word))
    return words


def _segment_regex(segment: str) -> str:
    out, i = [], 0
    while i < len(segment):
        char = segment[i]
        if char == "\\" and i + 1 < len(segment):
            out.append(re.escape(segment[i + 1]))
            i += 2
            continue
        if char == "*":
            while i + 1 < len(segment) and segment[i + 1] == "*":
                i += 1
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def pattern_regex(pattern: str) -> re.Pattern:
    """The pattern as a regular expression over a relative path (see the module's rules)."""
    anchored = pattern.startswith("/")
    body = pattern[1:] if anchored else pattern
    directory = body.endswith("/") and not body.endswith("\\/")
    body = body.rstrip("/") if directory else body
    if not body:
        raise ValueError("the pattern names no path")
    anchored = anchored or "/" in body
    segments = body.split("/")
    out = ["" if anchored else "(?:.*/)?"]
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            out.append(".*" if last else "(?:.*/)?")
        else:
            out.append(_segment_regex(segment) + ("" if last else "/"))
    if directory:
        out.append("/.*")
    elif segments[-1] == "*" and (len(segments) > 1 or anchored):
        pass  # docs/*: the files directly in docs, not deeper
    elif segments[-1] != "**":
        out.append("(?:/.*)?")
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def _pattern_problem(pattern: str) -> str | None:
    if pattern.startswith("!"):
        return f"“{pattern}”: negation (!) does not work in CODEOWNERS"
    unescaped = re.sub(r"\\.", "", pattern)
    if "[" in unescaped or "]" in unescaped:
        return f"“{pattern}”: character ranges ([...]) do not work in CODEOWNERS"
    return None


def parse_codeowners(text: str) -> Codeowners:
    """The file's rules in order; CodeownersInvalid naming the line of each problem."""
    found: list[CodeownersRule] = []
    problems: list[LineProblem] = []
    for number, line in enumerate(text.splitlines(), start=1):
        words = _tokens(line.lstrip("\ufeff"))
        if not words:
            continue
        pattern, owners = words[0], tuple(words[1:])
        problem = _pattern_problem(pattern)
        bad = [owner for owner in owners if not OWNER.fullmatch(owner)]
        if bad and problem is None:
            problem = (f"“{bad[0]}” is not an owner: write @user, @org/team or an "
                       "e-mail address")
        if problem is None:
            try:
                found.append(CodeownersRule(pattern, owners, number, pattern_regex(pattern)))
            except ValueError as exc:
                problem = f"“{pattern}”: {exc}"
        if problem is not None:
            problems.append(LineProblem(number, problem))
    if problems:
        raise CodeownersInvalid(problems)
    return Codeowners(tuple(found))


@lru_cache(maxsize=16)
def codeowners_of(text: str) -> Codeowners:
    """A stored file's rules, parsed once per text (stored text was valid when saved)."""
    try:
        return parse_codeowners(text)
    except CodeownersInvalid:
        return Codeowners()
