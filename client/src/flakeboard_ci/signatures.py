"""A failure's signature, as the board signs a JUnit failure (flakeboard/rules/signatures.py,
held equal by a table test): its line with what changes from run to run replaced (UUIDs,
times and dates, temporary paths, hexadecimal ids, then every other number), white space
made one space, cut to SIGNATURE_MAX_LENGTH. gate sends it with each failed record: when
every failure of an attempt carries one, its runner broke (a full disk, a missing service)."""

from __future__ import annotations

import re

SIGNATURE_MAX_LENGTH = 200

_UUID = re.compile(
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE
)
_DATE = r"\d{4}-\d{2}-\d{2}"
_TIME = r"\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:\s?(?:Z|UTC|[+-]\d{2}:?\d{2}))?"
_TIMESTAMP = re.compile(rf"\b{_DATE}(?:[T ]{_TIME})?|\b{_TIME}\b")
_TEMP_PATH = re.compile(
    r"(?:/private)?/(?:tmp|var/folders|var/tmp)/[^\s'\"),:;\]]*"
    r"|\b[A-Za-z]:\\(?:[^\s'\"]*\\)?Temp\\[^\s'\"),:;\]]*",
    re.IGNORECASE,
)
_HEX = re.compile(
    r"\b0x[0-9a-f]+\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b", re.IGNORECASE
)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_SPACE = re.compile(r"\s+")


def _date_or_time(match):
    text = match.group(0)
    return "<date>" if len(text) == 10 and text[4] == "-" else "<time>"


def failure_signature(message):
    """``message`` with its run-to-run values replaced ("" for none)."""
    text = _UUID.sub("<uuid>", message or "")
    text = _TIMESTAMP.sub(_date_or_time, text)
    text = _TEMP_PATH.sub("<tmp>", text)
    text = _HEX.sub("<hex>", text)
    text = _NUMBER.sub("<n>", text)
    return _SPACE.sub(" ", text).strip()[:SIGNATURE_MAX_LENGTH].rstrip()
