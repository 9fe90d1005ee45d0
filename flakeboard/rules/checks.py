"""Input checks shared by every path that writes: node ids, owners and evidence.

Each answers None when the value is acceptable, else the Problem with it. The sentences
that explain a problem belong to presentation (``ledger/messages.py``), not to the rules.
"""

from __future__ import annotations

import re
from enum import StrEnum

from .limits import EVIDENCE_MAX_LENGTH, NODEID_MAX_LENGTH, OWNER_MAX_LENGTH

# C0 and C1 control characters and DEL: never part of a node id, owner or evidence.
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_HANDLE = re.compile(r"@[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,62})(?:/[A-Za-z0-9_.-]{1,64})?")
_EMAIL = re.compile(r"[^@\s<>\"']{1,64}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")


class Problem(StrEnum):
    NOT_A_STRING = "not_a_string"
    REQUIRED = "required"
    TOO_LONG = "too_long"
    CONTROL_CHARS = "control_chars"
    NOT_UNICODE = "not_unicode"  # a lone surrogate, which a JSON file can hold
    BAD_FORMAT = "bad_format"


def has_control_chars(text: str) -> bool:
    return _CONTROL_CHARS.search(text) is not None


def is_unicode(text: str) -> bool:
    """False for a string holding a lone surrogate: not storable."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _text_problem(value: object, max_length: int, *, blank_ok: bool = False) -> Problem | None:
    if not isinstance(value, str):
        return Problem.NOT_A_STRING
    if not value or not (blank_ok or value.strip()):
        return Problem.REQUIRED
    if len(value) > max_length:
        return Problem.TOO_LONG
    if value.isprintable():  # no control character and no surrogate: the usual case, fast
        return None
    if has_control_chars(value):
        return Problem.CONTROL_CHARS
    if not is_unicode(value):
        return Problem.NOT_UNICODE
    return None


def nodeid_problem(nodeid: object) -> Problem | None:
    # A node id is taken as the test runner wrote it: spaces are part of it.
    return _text_problem(nodeid, NODEID_MAX_LENGTH, blank_ok=True)


def label_problem(label: object, max_length: int) -> Problem | None:
    """Upload metadata (a commit, a branch, a patch, a fixture manifest, an upload's
    evidence) may be blank, but is one line of text of at most ``max_length``."""
    if label == "":
        return None
    return _text_problem(label, max_length, blank_ok=True)


def owner_problem(owner: object) -> Problem | None:
    """An owner is a @handle (optionally @org/team) or an e-mail address."""
    if problem := _text_problem(owner, OWNER_MAX_LENGTH):
        return problem
    if _HANDLE.fullmatch(owner) or _EMAIL.fullmatch(owner):
        return None
    return Problem.BAD_FORMAT


def evidence_problem(evidence: object) -> Problem | None:
    """Evidence is a CI run reference or an http(s) URL: non-empty, one line."""
    return _text_problem(evidence, EVIDENCE_MAX_LENGTH)


def evidence_is_link(evidence: str) -> bool:
    return evidence.lower().startswith(("http://", "https://"))
