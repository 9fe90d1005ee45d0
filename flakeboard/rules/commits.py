"""A commit in one canonical form, wherever it is read: an upload's metadata (verdicts,
reports, JUnit) and a query that names one (the tiers, CI's order, the lists' filters).

The attempts of a gate and the pooled measurements are found by their commit (2.4a), so
one commit in two spellings would be two gates: a REJECT at ``abc123`` could be rerun as
``ABC123`` or ``abc123 `` and start afresh. Git reads hex in either case and no commit
ends in a space: the canonical form is trimmed, and lower-case when it is hex. Any other
label (a tag, ``HEAD~1``, a CI's own run name) is taken as written, trimmed.
"""

from __future__ import annotations

import re

# ASCII hex only: str.lower() of another script's letters is no git spelling.
_HEX = re.compile(r"[0-9A-Fa-f]+", re.ASCII)
# The blanks a shell or a copy leaves around a commit. Not str.strip()'s default, which
# also takes the control characters \x1c to \x1f: those stay, and are refused.
_BLANKS = " \t\n\r\v\f"


def canonical_commit(value: str) -> str:
    """``value`` trimmed, and in lower case when it is hex digits."""
    value = value.strip(_BLANKS)
    return value.lower() if _HEX.fullmatch(value) else value
