"""A test's passive evidence over the last SUMMARY_DAYS days, today included, in one row:
the sums of its days' counts, its first and last day with flaky failures, and its flaky
failures a day (oldest first). The flaky-tests page, the targets file, the overview's
tile and a node's page read it instead of adding up the days (``junit.summary``).

The summary is of one day: a day's counts are added to it when the day falls in its
window; a later day moves it, taking off the days that left the window and adding those
that joined it, or rebuilds it from the days' rollups when no day is left in common."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import date, timedelta

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


def counts_moved(counts: tuple[int, ...], left: tuple[int, ...],
                 joined: tuple[int, ...]) -> tuple[int, ...]:
    """A window's sums (in COUNTS order) moved: the days that left it taken off, the days
    that joined it added."""
    return tuple(c - gone + came for c, gone, came in zip(counts, left, joined, strict=True))


def summary_moved(summary: SummaryCounts, *, as_of: date, today: date, left: tuple[int, ...],
                  joined: tuple[int, ...], joined_flaky: dict[date, int]) -> SummaryCounts:
    """``summary`` (of the window ending ``as_of``) moved to the window ending ``today``, a
    later day within SUMMARY_DAYS: the sums (in COUNTS order) of the days that left the
    window taken off (``left``) and of those that joined it added (``joined``), with the
    flaky failures of each joined day (``joined_flaky``). The first and last flaky days
    are the spark's."""
    shift = (today - as_of).days
    spark = [*summary.spark[shift:], *(0,) * shift]
    for day, flaky in joined_flaky.items():
        spark[SUMMARY_DAYS - 1 - (today - day).days] += flaky
    flaky_days = [today - timedelta(days=SUMMARY_DAYS - 1 - i) for i, n in enumerate(spark) if n]
    return SummaryCounts(
        *counts_moved(tuple(getattr(summary, name) for name in COUNTS), left, joined),
        first_flaky=flaky_days[0] if flaky_days else None,
        last_flaky=flaky_days[-1] if flaky_days else None,
        spark=tuple(spark),
    )
