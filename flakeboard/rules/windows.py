"""A predicate over dates as data: a window of days relative to ``today``.

Both the Python predicates and the database filters are built from the same window, so
an edge (inclusive, in whole days) is written once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta


@dataclass(frozen=True)
class DayWindow:
    """The days ``today + first`` through ``today + last``, both included; None: open."""

    first: int | None = None
    last: int | None = None

    def bounds(self, today: date) -> tuple[date | None, date | None]:
        """The first and last day in the window, both included (None: unbounded)."""
        lo = None if self.first is None else today + timedelta(days=self.first)
        hi = None if self.last is None else today + timedelta(days=self.last)
        return lo, hi

    def contains(self, day: date, today: date) -> bool:
        lo, hi = self.bounds(today)
        return (lo is None or lo <= day) and (hi is None or day <= hi)


def retention_window(days: int) -> DayWindow:
    """The days raw rows are kept: the last ``days``, today included; older rows go."""
    return DayWindow(first=-(days - 1))
