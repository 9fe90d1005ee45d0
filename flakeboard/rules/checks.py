"""Input checks shared by every path that writes: node ids, owners and evidence.

Each answers None when the value is acceptable, else a short sentence saying why not.
"""

from __future__ import annotations

import re

from .limits import EVIDENCE_MAX_LENGTH, NODEID_MAX_LENGTH, OWNER_MAX_LENGTH

# C0 and C1 control characters and DEL: never part of a node id, owner or evidence.
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_HANDLE = re.compile(r"@[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,62})(?:/[A-Za-z0-9_.-]{1,64})?")
_EMAIL = re.compile(r"[^@\s<>\"']{1,64}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")


def has_control_chars(text: str) -> bool:
    return _CONTROL_CHARS.search(text) is not None


def is_unicode(text: str) -> bool:
    """False for a string holding a lone surrogate (a JSON file can): not storable."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def owner_error(owner: str) -> str | None:
    """An owner is a @handle (optionally @org/team) or an e-mail address."""
    if not owner or not owner.strip():
        return "An owner is required: a @handle or an e-mail address."
    if has_control_chars(owner):
        return "The owner may not contain control characters."
    if _HANDLE.fullmatch(owner) or (
        len(owner) <= OWNER_MAX_LENGTH and _EMAIL.fullmatch(owner)
    ):
        return None
    return "The owner must be a @handle (such as @finley) or an e-mail address."


def evidence_error(evidence: str) -> str | None:
    """Evidence is a CI run reference or an http(s) URL: non-empty, one line."""
    if not evidence or not evidence.strip():
        return "Evidence is required: a CI run reference or an http(s) URL."
    if len(evidence) > EVIDENCE_MAX_LENGTH:
        return f"The evidence may be at most {EVIDENCE_MAX_LENGTH} characters long."
    if has_control_chars(evidence):
        return "The evidence may not contain control characters or line breaks."
    return None


def evidence_is_link(evidence: str) -> bool:
    return evidence.lower().startswith(("http://", "https://"))


def nodeid_error(nodeid: object) -> str | None:
    if not isinstance(nodeid, str):
        return "must be a string"
    if not nodeid:
        return "must not be empty"
    if len(nodeid) > NODEID_MAX_LENGTH:
        return f"must be at most {NODEID_MAX_LENGTH} characters long (got {len(nodeid)})"
    if has_control_chars(nodeid):
        return "must not contain control characters"
    return None
