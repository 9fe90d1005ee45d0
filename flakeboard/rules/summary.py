"""A test's passive evidence over the last SUMMARY_DAYS days, today included, in one row:
the sums of its days' counts, its first and last day with flaky failures, and its flaky
failures a day (oldest first). The flaky-tests page, the targets file, the overview's
tile and a node's page read it instead of adding up the days (``junit.summary``).

The summary is of one day: a day's counts are added to it when the day falls in its
window; a later day starts a new summary, rebuilt from the days' rollups."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import date

from .windows import DayWindow

SUMMARY_DAYS = 30


def summary_window() -> DayWindow:
    """The summary's days: the last SUMMARY_DAYS, today included."""
    return DayWindow(first=-(SUMMARY_DAYS - 1), last=0)


@dataclass(frozen=True)
class DayCounts:
    """What one upload adds to a test's day: runs, failures, flaky failures, flaky commits."""

    runs: int = 0
    failures: int = 0
    flaky_failures: int = 0
    flaky_commits: int = 0


# What a day adds and a summary sums.
COUNTS = tuple(f.name for f in fields(DayCounts))


@dataclass(frozen=True)
class SummaryCounts(DayCounts):
    """The window's days' counts summed, its first and last day with flaky failures, and
    its flaky failures a day (oldest first)."""

    first_flaky: date | None = None
    last_flaky: date | None = None
    spark: tuple[int, ...] = field(default=(0,) * SUMMARY_DAYS)


def summary_added(summary: SummaryCounts, counts: DayCounts, *, day: date,
                  as_of: date) -> SummaryCounts:
    """``summary`` (of the window ending ``as_of``) with ``counts`` of ``day`` added; the
    same summary when the day is outside the window."""
    if not summary_window().contains(day, as_of):
        return summary
    spark = list(summary.spark)
    spark[SUMMARY_DAYS - 1 - (as_of - day).days] += counts.flaky_failures
    flaky = counts.flaky_failures > 0
    first, last = summary.first_flaky, summary.last_flaky
    return SummaryCounts(
        **{name: getattr(summary, name) + getattr(counts, name) for name in COUNTS},
        first_flaky=min(first, day) if flaky and first else day if flaky else first,
        last_flaky=max(last, day) if flaky and last else day if flaky else last,
        spark=tuple(spark),
    )
