"""Whether a quarantined node's failure rate has got worse since its entry was made.

"Then" is the measurement the entry was made on (its n and fails). "Now" is the node's
latest measurements since the entry was made, at most RECENT_MEASUREMENTS of them, pooled
into one rate (as ``recent_rate`` pools them for the clearance outlook).

The rate is worse when the two 95% Wilson intervals do not overlap and now's lies above:
now's lower bound is above then's upper bound. Two intervals that merely differ in their
centres say nothing; disjoint 95% intervals are a stricter test than a 5% two-sample test
(for intervals of like width, about 0.6%), so ordinary run-to-run noise does not set it
off, and a small sample on either side, whose interval is wide, cannot set it off alone.
An entry made on no runs (n = 0) has an upper bound of 1 and is never worse.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .clearance import RECENT_MEASUREMENTS
from .stats import lower95, upper95


@dataclass(frozen=True)
class RateChange:
    """A node's rate when its entry was made against its recent pooled rate."""

    then_n: int
    then_fails: int
    now_n: int
    now_fails: int
    measurements: int  # how many recent measurements were pooled

    @property
    def then_rate(self) -> float | None:
        return self.then_fails / self.then_n if self.then_n else None

    @property
    def then_upper(self) -> float:
        return upper95(self.then_fails, self.then_n)

    @property
    def now_rate(self) -> float:
        return self.now_fails / self.now_n

    @property
    def now_lower(self) -> float:
        return lower95(self.now_fails, self.now_n)

    @property
    def worse(self) -> bool:
        return self.now_lower > self.then_upper


def rate_change(then: tuple[int, int], since: Iterable[tuple[int, int]],
                recent: int = RECENT_MEASUREMENTS) -> RateChange | None:
    """The entry's (n, fails) against the last ``recent`` of the (n, fails) measured since
    it was made (oldest first); None when nothing has been measured since."""
    latest = [(n, fails) for n, fails in since][-recent:] if recent > 0 else []
    runs = sum(n for n, _ in latest)
    if not runs:
        return None
    fails = sum(failed for _, failed in latest)
    return RateChange(then[0], then[1], runs, fails, len(latest))
