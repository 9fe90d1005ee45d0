"""The range of days a trends view covers, decided once for the trends page and the API
alike: which range a ``from``/``to`` pair asks for, or why that pair is refused; the buckets
(days or weeks) of that range and how many of its days each covers; and the part of it a
chart draws, from the suite's first data on."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from enum import StrEnum

BUCKET_DAYS = {"day": 1, "week": 7}  # weeks start on Monday

DEFAULT_RANGE_DAYS = 30
MAX_RANGE_DAYS = 366  # a leap year, both ends included: a year fits, day by day
# No upload predates the board. A floor this far above date.min also keeps every sum the
# charts do on a range (the known-node window reaches 30 days before it, a week bucket
# starts up to 6 days before it) inside the calendar; the latest day, today, is as far
# from date.max.
EARLIEST_DAY = date(2000, 1, 1)
# Today is UTC's. A viewer east of UTC is already in UTC's tomorrow: a ``to`` up to this
# many days after today (inclusive) is taken as today, and said so; one later is refused.
TO_DAYS_AHEAD = 1
# The trends page once called its range start and end; the API never did.
RENAMED_PARAMETERS = {"start": "from", "end": "to"}

_ISO_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


class RangeProblem(StrEnum):
    NOT_A_DATE = "not_a_date"
    AFTER_TODAY = "after_today"
    BEFORE_EARLIEST = "before_earliest"
    AFTER_TO = "after_to"
    TOO_LONG = "range_too_long"


@dataclass(frozen=True)
class DayRange:
    """The days from ``start`` to ``end``, both included; ``end_asked`` is the later end a
    ``to`` asked for when the range was cut to end today (None when it was not)."""

    start: date
    end: date
    end_asked: date | None = field(default=None, kw_only=True)

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1

    @property
    def note(self) -> str:
        """What a page says of a range cut to end today, or nothing."""
        if self.end_asked is None:
            return ""
        return f"to {self.end_asked} is after today in UTC; shown up to {self.end}."


@dataclass(frozen=True)
class RangeError:
    """Why a range was refused: the parameter ("from" or "to") to change, and a sentence."""

    parameter: str
    problem: RangeProblem
    message: str


def last_days(days: int, today: date) -> DayRange:
    """The ``days`` days ending today."""
    return DayRange(today - timedelta(days=days - 1), today)


def latest_to(today: date) -> date:
    """The latest ``to`` accepted (and taken as today)."""
    return today + timedelta(days=TO_DAYS_AHEAD)


def parse_day(text: str) -> date | None:
    """A day written YYYY-MM-DD and nothing else (no time, no week date, no stray
    whitespace), or None."""
    if not _ISO_DAY.fullmatch(text):
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:  # 2026-02-30 and the like
        return None


def day_range(first: str | None, last: str | None, *, today: date) -> DayRange | RangeError:
    """The range the ``from`` (``first``) and ``to`` (``last``) parameters ask for, None
    meaning not sent: by default ``to`` is today and ``from`` the day that makes the range
    DEFAULT_RANGE_DAYS long (never before EARLIEST_DAY). A ``to`` after today but not after
    latest_to(today) is taken as today, the range keeping it as ``end_asked``.

    Refused: a parameter that is not a YYYY-MM-DD day, ``to`` after latest_to(today), either
    before EARLIEST_DAY, ``from`` after ``to``, ``from`` after today, and a range over
    MAX_RANGE_DAYS days. The first problem found is named, ``from`` before ``to``.
    """
    parsed = {}
    for name, text in (("from", first), ("to", last)):
        if text is not None:
            parsed[name] = parse_day(text)
            if parsed[name] is None:
                return RangeError(name, RangeProblem.NOT_A_DATE,
                                  f"{name} must be a day written YYYY-MM-DD, such as {today}.")
    asked = parsed.get("to", today)
    if asked > latest_to(today):
        return RangeError("to", RangeProblem.AFTER_TODAY,
                          f"to ({asked}) is after {latest_to(today)}, the day after today "
                          f"({today}) in UTC: a range ends today at the latest.")
    for name, day in parsed.items():
        if day < EARLIEST_DAY:
            return RangeError(name, RangeProblem.BEFORE_EARLIEST,
                              f"{name} ({day}) is before {EARLIEST_DAY}, the earliest day a "
                              f"range may cover.")
    end, end_asked = (today, asked) if asked > today else (asked, None)
    if "from" not in parsed:
        # Computed only now: end is known to be at least EARLIEST_DAY, far from date.min.
        start = max(end - timedelta(days=DEFAULT_RANGE_DAYS - 1), EARLIEST_DAY)
        return DayRange(start, end, end_asked=end_asked)
    found = DayRange(parsed["from"], end, end_asked=end_asked)
    if found.start > asked:
        return RangeError("from", RangeProblem.AFTER_TO,
                          f"from ({found.start}) is after to ({asked}).")
    if found.start > found.end:
        return RangeError("from", RangeProblem.AFTER_TODAY,
                          f"from ({found.start}) is after today ({today}) in UTC: a range "
                          f"ends today at the latest.")
    if found.days > MAX_RANGE_DAYS:
        return RangeError("from", RangeProblem.TOO_LONG,
                          f"The range from {found.start} to {found.end} spans {found.days} "
                          f"days: at most {MAX_RANGE_DAYS}.")
    return found


# --- The buckets of a range -------------------------------------------------------------


def bucket_start(day: date, bucket: str) -> date:
    """The first day of the bucket holding ``day`` (weeks start on Monday)."""
    return day - timedelta(days=day.weekday()) if bucket == "week" else day


def bucket_starts(start: date, end: date, bucket: str) -> list[date]:
    """The first day of each bucket meeting [start, end], in order."""
    step = timedelta(days=BUCKET_DAYS[bucket])
    first = bucket_start(start, bucket)
    return [first + i * step for i in range((end - first) // step + 1)]


def days_covered(first: date, bucket: str, start: date, end: date) -> int:
    """How many days of [start, end] the bucket beginning on ``first`` covers: fewer than
    its full length (BUCKET_DAYS) only where the range cuts it, at the range's edges."""
    last = first + timedelta(days=BUCKET_DAYS[bucket] - 1)
    return max(0, (min(last, end) - max(first, start)).days + 1)


def charted_range(start: date, end: date, first_data: date | None) -> DayRange | None:
    """The part of [start, end] a chart draws: from the suite's first data on, since the
    days before it hold nothing to count (not even a zero); None when the range ends
    before any data."""
    if first_data is None or first_data > end:
        return None
    return DayRange(max(start, first_data), end)
