"""The buckets of a trends range and where its charts start (flakeboard/rules/trends.py): a
bucket cut by the range's edges says how many days it covers, and the charts begin with
the suite's first data."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakeboard.rules.trends_range import (
    BUCKET_DAYS,
    DayRange,
    bucket_start,
    bucket_starts,
    charted_range,
    days_covered,
)
from tests.properties import PROPERTY

MONDAY = date(2026, 3, 2)
SUNDAY = MONDAY + timedelta(days=6)


# (bucket's first day, bucket, range start, range end) → days covered
COVERED = [
    pytest.param(MONDAY, "week", MONDAY, SUNDAY, 7, id="a whole week"),
    pytest.param(MONDAY, "week", MONDAY + timedelta(days=2), SUNDAY + timedelta(days=30), 5,
                 id="range starts on wednesday: 5 days"),
    pytest.param(MONDAY, "week", MONDAY - timedelta(days=30), MONDAY + timedelta(days=3), 4,
                 id="range ends on thursday: 4 days"),
    pytest.param(MONDAY, "week", MONDAY + timedelta(days=1), MONDAY + timedelta(days=1), 1,
                 id="a one-day range inside the week"),
    pytest.param(MONDAY, "week", SUNDAY, SUNDAY + timedelta(days=7), 1, id="only its sunday"),
    pytest.param(MONDAY, "week", SUNDAY + timedelta(days=1), SUNDAY + timedelta(days=9), 0,
                 id="after the range's start: none"),
    pytest.param(MONDAY, "day", MONDAY, MONDAY, 1, id="a day is always whole"),
    pytest.param(MONDAY, "day", MONDAY + timedelta(days=1), SUNDAY, 0, id="a day outside"),
]


@pytest.mark.parametrize(("first", "bucket", "start", "end", "days"), COVERED)
def test_days_a_bucket_covers(first, bucket, start, end, days) -> None:
    assert days_covered(first, bucket, start, end) == days


@PROPERTY
@given(st.dates(date(2000, 1, 1), date(2030, 12, 31)), st.integers(0, 400),
       st.sampled_from(list(BUCKET_DAYS)))
def test_buckets_cover_the_range_once_and_only_its_edges_are_partial(start, length, bucket):
    end = start + timedelta(days=length)
    starts = bucket_starts(start, end, bucket)
    days = [days_covered(first, bucket, start, end) for first in starts]
    full = BUCKET_DAYS[bucket]
    assert sum(days) == DayRange(start, end).days
    assert all(1 <= d <= full for d in days)
    assert all(d == full for d in days[1:-1])
    # A bucket is partial exactly when the range starts or ends inside it.
    for first, covered in zip(starts, days, strict=True):
        last = first + timedelta(days=full - 1)
        assert (covered < full) == (first < start or end < last)
    assert bucket_start(start, bucket) == starts[0]


# (range start, range end, first data) → the charted range, or None
CHARTED = [
    pytest.param(MONDAY, SUNDAY, MONDAY - timedelta(days=9), DayRange(MONDAY, SUNDAY),
                 id="data from before: the whole range"),
    pytest.param(MONDAY, SUNDAY, MONDAY + timedelta(days=2),
                 DayRange(MONDAY + timedelta(days=2), SUNDAY),
                 id="data begins inside: from its first day"),
    pytest.param(MONDAY, SUNDAY, SUNDAY, DayRange(SUNDAY, SUNDAY), id="only the last day"),
    pytest.param(MONDAY, SUNDAY, SUNDAY + timedelta(days=1), None, id="data begins after"),
    pytest.param(MONDAY, SUNDAY, None, None, id="no data at all"),
]


@pytest.mark.parametrize(("start", "end", "first", "charted"), CHARTED)
def test_charts_start_with_the_first_data(start, end, first, charted) -> None:
    assert charted_range(start, end, first) == charted


@PROPERTY
@given(st.dates(date(2000, 1, 1), date(2030, 12, 31)), st.integers(0, 400),
       st.one_of(st.none(), st.integers(-30, 430)))
def test_the_charted_range_is_the_range_from_the_first_data_on(start, length, offset):
    end = start + timedelta(days=length)
    first = None if offset is None else start + timedelta(days=offset)
    charted = charted_range(start, end, first)
    days = {start + timedelta(days=i) for i in range(length + 1)}
    shown = set() if charted is None else {
        charted.start + timedelta(days=i) for i in range(charted.days)}
    assert shown == {day for day in days if first is not None and day >= first}
