"""A quarantined node's rate getting worse (issue 21), and the Wilson lower bound it is read
with: worse when the recent pooled rate's lower bound is above the upper bound of the rate
the entry was made on. Also an entry's age, which stops at the day it was cleared.

Pure rules: tables for the figures, hypothesis for the invariants.
"""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from flakeboard.rules import RECENT_MEASUREMENTS, entry_age_days, lower95, rate_change, upper95
from tests.helpers import table, yes
from tests.properties import PROPERTY

# --- the lower bound -----------------------------------------------------------------------

LOWER = table("""
    0   200   0.0      none-failed
    5   200   0.0107   5/200
    30  200   0.1071   30/200
    1   1     0.2065   1/1
    200 200   0.9812   all-failed
    0   0     0.0      no-runs
""", int, int, float)  # fails, n, lower95 rounded to 4 decimals


@pytest.mark.parametrize(("fails", "n", "expected"), LOWER)
def test_lower95_reference_values(fails, n, expected):
    assert round(lower95(fails, n), 4) == expected


@st.composite
def fails_and_runs(draw, max_n: int = 100_000) -> tuple[int, int]:
    n = draw(st.integers(min_value=1, max_value=max_n), label="n")
    return draw(st.integers(min_value=0, max_value=n), label="fails"), n


@PROPERTY
@given(fails_and_runs())
@example((0, 1))
@example((1, 1))
def test_the_rate_lies_between_the_bounds(case):
    fails, n = case
    assert 0.0 <= lower95(fails, n) <= fails / n <= upper95(fails, n) <= 1.0


@PROPERTY
@given(fails_and_runs())
def test_the_lower_bound_of_failures_is_one_minus_the_upper_bound_of_passes(case):
    fails, n = case
    assert lower95(fails, n) == pytest.approx(1 - upper95(n - fails, n), abs=1e-12)


# --- getting worse -------------------------------------------------------------------------

def runs(cell: str) -> list[tuple[int, int]]:
    """"12/200,0/200": measurements since the entry was made, oldest first, fails/n each;
    "." none."""
    if cell == ".":
        return []
    return [(int(n), int(fails)) for fails, n in (pair.split("/") for pair in cell.split(","))]


WORSE = table("""
    5/200   5/200                                  no    the-same-again
    5/200   12/200                                 no    higher-but-within-the-noise
    5/200   20/200                                 yes   four-times-the-failures
    5/200   9/200,9/200,9/200,9/200,9/200          no    pooled-nearly-twice-not-enough
    0/200   6/200,6/200,6/200,6/200,6/200          yes   clean-then-steady-failures-now
    0/200   1/200,1/200,1/200,1/200,1/200          no    clean-then-rare-failures-now
    2/200   5/30                                   yes   a-small-sample-far-above
    2/200   1/10                                   no    one-failure-in-a-tiny-sample
    0/0     100/200                                no    made-on-no-runs
    5/200   0/200,0/200,0/200,0/200,0/200          no    fixed-since
    5/200   60/200,0/200,0/200,0/200,0/200,0/200   no    only-the-latest-five-count
    5/200   60/200,60/200,60/200,60/200,0/200      yes   one-clean-run-does-not-hide-four
""", str, runs, yes)  # the entry's fails/n, measured since, worse


@pytest.mark.parametrize(("then", "since", "worse"), WORSE)
def test_worse(then, since, worse):
    (n, fails), = runs(then)
    change = rate_change((n, fails), since)
    assert change.worse is worse
    assert change.measurements == min(len(since), RECENT_MEASUREMENTS)


def test_the_figures_then_and_now():
    change = rate_change((200, 5), [(200, 0), (200, 20), (200, 40)])
    assert (change.then_rate, round(change.then_upper, 4)) == (0.025, 0.0572)
    assert (change.now_n, change.now_fails, change.now_rate) == (600, 60, 0.1)
    assert round(change.now_lower, 4) == round(lower95(60, 600), 4) == 0.0785
    assert rate_change((0, 0), [(10, 1)]).then_rate is None


@pytest.mark.parametrize("since", [[], [(0, 0)], [(0, 0), (0, 0)]], ids=["none", "0", "0-0"])
def test_nothing_measured_since_is_no_change(since):
    assert rate_change((200, 5), since) is None


measured = st.tuples(st.integers(min_value=1, max_value=5_000), st.integers(min_value=0))
measurements = st.lists(
    measured.map(lambda pair: (pair[0], pair[1] % (pair[0] + 1))), min_size=1, max_size=8)


@PROPERTY
@given(fails_and_runs(max_n=5_000), measurements)
@example((5, 200), [(200, 5)])
@example((0, 1), [(1, 0)])
def test_a_rate_no_higher_than_then_is_never_worse(then, since):
    fails, n = then
    change = rate_change((n, fails), since)
    if change.now_rate <= fails / n:
        assert not change.worse


@PROPERTY
@given(fails_and_runs(max_n=5_000), measurements, st.integers(min_value=1, max_value=5_000))
def test_more_failures_now_never_make_it_better(then, since, more):
    fails, n = then
    last_n, last_fails = since[-1]
    worse_now = [*since[:-1], (last_n, min(last_n, last_fails + more))]
    if rate_change((n, fails), since).worse:
        assert rate_change((n, fails), worse_now).worse


@PROPERTY
@given(fails_and_runs(max_n=5_000), measurements, measurements)
def test_only_the_latest_measurements_count(then, older, latest):
    fails, n = then
    latest = (latest * RECENT_MEASUREMENTS)[:RECENT_MEASUREMENTS]
    assert rate_change((n, fails), [*older, *latest]) == rate_change((n, fails), latest)


# --- an entry's age ------------------------------------------------------------------------

CREATED = date(2026, 3, 1)

AGES = table("""
    2026-03-01   -            0    made-today
    2026-03-31   -            30   open-thirty-days
    2026-03-31   2026-03-11   10   cleared-after-ten-days
    2027-03-01   2026-03-11   10   a-year-after-clearing
    2026-03-01   2026-03-01   0    cleared-the-day-it-was-made
""", date.fromisoformat, date.fromisoformat, int)  # today, cleared, age in days


@pytest.mark.parametrize(("today", "cleared", "age"), AGES)
def test_entry_age(today, cleared, age):
    assert entry_age_days(CREATED, today, cleared) == age


@PROPERTY
@given(st.integers(min_value=0, max_value=3_000), st.integers(min_value=0, max_value=3_000))
def test_a_cleared_entrys_age_stops_at_the_clearing_day(open_days, later):
    cleared = CREATED + timedelta(days=open_days)
    today = cleared + timedelta(days=later)
    assert entry_age_days(CREATED, today, cleared) == open_days
    assert entry_age_days(CREATED, today) == open_days + later
