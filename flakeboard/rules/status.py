"""Whether a suite's gate passes now, and why not.

The overview's headline, the status endpoint and the status badge all ask this module.
The gate is failing while any open entry is expired (its node fails every report), any
entry is a tier violation (its node counts as unquarantined), or the quarantined share is
over the cap (every report fails); otherwise it is passing.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from .share import ShareFigures
from .text import plural


class StatusCause(StrEnum):
    EXPIRED = "expired"
    TIER_VIOLATION = "tier_violation"
    OVER_CAP = "over_cap"


@dataclass(frozen=True)
class GateStatusNow:
    """The ledger's figures that decide whether the gate passes today."""

    expired: int
    tier_violations: int
    share: ShareFigures

    @property
    def causes(self) -> dict[StatusCause, int]:
        """Each cause with its count: expired entries, tier violations, and the entries
        over the cap (how many must go for the share to be within it)."""
        return {
            StatusCause.EXPIRED: self.expired,
            StatusCause.TIER_VIOLATION: self.tier_violations,
            StatusCause.OVER_CAP: self.share.excess,
        }

    @property
    def failing_causes(self) -> list[StatusCause]:
        return [cause for cause, count in self.causes.items() if count > 0]

    @property
    def passing(self) -> bool:
        return not self.failing_causes


CAUSE_TEXT = {
    StatusCause.EXPIRED: ("expired entry", "expired entries"),
    StatusCause.TIER_VIOLATION: ("tier violation", "tier violations"),
    StatusCause.OVER_CAP: ("entry over the share cap", "entries over the share cap"),
}


def cause_text(cause: StatusCause, count: int) -> str:
    """"1 expired entry", "3 tier violations"."""
    return plural(count, *CAUSE_TEXT[cause])


def status_summary(status: GateStatusNow) -> str:
    """One line: "passing", or "failing: 1 expired entry, 2 tier violations"."""
    if status.passing:
        return "passing"
    counts = status.causes
    return "failing: " + ", ".join(cause_text(c, counts[c]) for c in status.failing_causes)
