"""Ledger entries: their states (SPEC 4), what counts toward the share, and expiry bounds.

Each state is a window of days on the entry's expiry, relative to today; the querysets
build their filters from the same windows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from enum import StrEnum

from .vocab import EntryState
from .windows import DayWindow

EXPIRING_WITHIN_DAYS = 7

# Open, quarantinable entries are in exactly one of these, by their expiry.
STATE_WINDOWS = {
    EntryState.EXPIRED: DayWindow(last=-1),
    EntryState.EXPIRING: DayWindow(first=0, last=EXPIRING_WITHIN_DAYS),
    EntryState.ACTIVE: DayWindow(first=EXPIRING_WITHIN_DAYS + 1),
}
# An unexpired entry (active or expiring): it freezes its node and counts toward the share.
LIVE = DayWindow(first=0)


@dataclass(frozen=True)
class EntryFacts:
    """What the gate needs to know about a node's open ledger entry."""

    expires: date
    tier_violation: bool = False


def entry_state(
    *, expires: date, today: date, cleared: bool = False, tier_violation: bool = False
) -> EntryState:
    if cleared:
        return EntryState.CLEARED
    if tier_violation:
        return EntryState.TIER_VIOLATION
    return next(s for s, window in STATE_WINDOWS.items() if window.contains(expires, today))


def entry_is_live(facts: EntryFacts, today: date) -> bool:
    """Open, unexpired and not a tier violation: it freezes its node and counts toward
    the quarantined share."""
    return not facts.tier_violation and LIVE.contains(facts.expires, today)


def renewal_revives(facts: EntryFacts, today: date) -> bool:
    """Whether renewing an open entry brings it back into the quarantined share: an
    expired one does, since a renewal's expiry is after today, so it is refused over the
    cap as a new entry is (SPEC 4). A live entry is in the share already, and a tier
    violation is never renewed."""
    return not facts.tier_violation and not entry_is_live(facts, today)


def entry_age_days(created: date, today: date, cleared: date | None = None) -> int:
    """Whole days an entry has been in the ledger: to today while it is open, and to the day
    it was cleared once it is (a cleared entry's age stops there)."""
    end = today if cleared is None else min(cleared, today)
    return (end - created).days


# A new or renewed entry expires after today, at most the policy's days ahead.
def expiry_window(max_days: int) -> DayWindow:
    return DayWindow(first=1, last=max_days)


def expiry_bounds(today: date, max_days: int) -> tuple[date, date]:
    """The earliest and latest expiry a new or renewed entry may have."""
    return expiry_window(max_days).bounds(today)  # type: ignore[return-value]


class ExpiryProblem(StrEnum):
    NOT_AFTER_TODAY = "not_after_today"
    TOO_FAR = "too_far"


def expiry_problem(expires: date, today: date, max_days: int) -> ExpiryProblem | None:
    earliest, latest = expiry_bounds(today, max_days)
    if expires < earliest:
        return ExpiryProblem.NOT_AFTER_TODAY
    if expires > latest:
        return ExpiryProblem.TOO_FAR
    return None
