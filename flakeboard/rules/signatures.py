"""A failure's first line, and its signature: the line with what changes from run to run
replaced, so that the failures of one test group into a few causes.

Pure Python, standard library only and Python 3.8: the board's JUnit files and the CI
client's gate sign failures alike, since the client's build takes this module as it is
(client/build.py's SHARED_RULES). What is replaced, in this order (each
placeholder holds no digit, so a signature is its own signature):

- UUIDs → ``<uuid>``;
- timestamps (an ISO date with a time, or a time of day) → ``<time>``, dates → ``<date>``;
- temporary paths (``/tmp/…``, ``/var/folders/…``, ``/private/var/…``, a Windows
  ``…\\Temp\\…``) → ``<tmp>``;
- hexadecimal: ``0x…`` addresses, and runs of 8 or more hex digits holding both a digit
  and a letter (object ids, digests) → ``<hex>``;
- every other number, with its decimals → ``<n>``;

then runs of white space become one space, and the result is cut to SIGNATURE_MAX_LENGTH.
"""

from __future__ import annotations

import re

MESSAGE_MAX_LENGTH = 500
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


def first_line(text: str | None) -> str:
    """The first line of ``text`` that holds more than white space, stripped and cut to
    MESSAGE_MAX_LENGTH; "" when there is none."""
    for line in (text or "").splitlines():
        if line := line.strip():
            return line[:MESSAGE_MAX_LENGTH]
    return ""


def _timestamp(match: re.Match) -> str:
    text = match.group(0)
    return "<date>" if len(text) == 10 and text[4] == "-" else "<time>"


def signature(message: str) -> str:
    """``message`` with its run-to-run values replaced (see the module's docstring)."""
    text = _UUID.sub("<uuid>", message)
    text = _TIMESTAMP.sub(_timestamp, text)
    text = _TEMP_PATH.sub("<tmp>", text)
    text = _HEX.sub("<hex>", text)
    text = _NUMBER.sub("<n>", text)
    return _SPACE.sub(" ", text).strip()[:SIGNATURE_MAX_LENGTH].rstrip()
