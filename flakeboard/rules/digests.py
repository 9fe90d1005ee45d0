"""A fixture manifest's digest in one canonical form (SPEC 2.3), wherever it is read or stored:
the suite's pin, an upload's records, the client.

The client's ``pin`` writes ``sha256:<hex>``; a seed file writes the bare hex. Both name one
digest, so both are taken, in any case, and stored as ``sha256:`` and the lower-case hex.
A record's manifest may be any non-empty run of hex digits: it is only compared, and one
that is not sha256's 64 never matches a pin, so it is drifted. A pin must be sha256's 64
(``pin_problem``): a shorter or longer one could never be matched by what ``pin`` prints,
and every gate against it would hold. Anything else (another algorithm's prefix, a blank
after the prefix, a space, a word) is refused where it is entered.
"""

from __future__ import annotations

import re

from .checks import Problem

DIGEST_PREFIX = "sha256:"
# What `flakeboard_ci.py pin` prints after the prefix: a SHA-256, in hex.
SHA256_HEX_DIGITS = 64
# ASCII only: under IGNORECASE alone, U+017F (long s) would match the prefix's "s".
_DIGEST = re.compile(r"(?:sha256:)?([0-9a-f]+)", re.IGNORECASE | re.ASCII)


def canonical_digest(value: str) -> str | None:
    """``sha256:`` and the lower-case hex of a digest written either way; None when
    ``value`` is not a digest."""
    match = _DIGEST.fullmatch(value)
    return None if match is None else DIGEST_PREFIX + match[1].lower()


def digest_problem(value: object, max_length: int) -> Problem | None:
    """None for a digest whose canonical form fits ``max_length`` characters, else why not."""
    if not isinstance(value, str):
        return Problem.NOT_A_STRING
    if not value:
        return Problem.REQUIRED
    canonical = canonical_digest(value)
    if canonical is None:
        return Problem.BAD_FORMAT
    if len(canonical) > max_length:
        return Problem.TOO_LONG
    return None


def pin_problem(value: object, max_length: int) -> Problem | None:
    """None for a fixture pin's digest: a digest (``digest_problem``) of sha256's 64 hex
    digits, as ``pin`` prints it; BAD_FORMAT for a digest of any other length."""
    problem = digest_problem(value, max_length)
    if problem is None and len(canonical_digest(value)) != len(DIGEST_PREFIX) + SHA256_HEX_DIGITS:
        return Problem.BAD_FORMAT
    return problem


def digest_key(value: str) -> str:
    """What a stored manifest is compared and shown as: its canonical form, or the value as
    it was stored when it is no digest (a pin or record kept from before digests were
    checked), so that such a value still matches itself and nothing else."""
    return canonical_digest(value) or value


def same_digest(one: str, other: str) -> bool:
    """Whether two manifests name one digest, however each is spelled."""
    return one == other or digest_key(one) == digest_key(other)
