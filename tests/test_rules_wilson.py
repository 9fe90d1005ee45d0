"""SPEC 2.1 (Wilson upper bound) and its invariants from SPEC 2.4.

upper95(fails, n, z=1.96) is the Wilson score interval's upper limit, clipped to [0, 1], and 1.0
when n = 0. A reported upper95 more than 0.0005 away from the server's is a mismatch.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from flakeboard.rules import (
    UPPER95_TOLERANCE,
    Z95,
    runs_needed,
    upper95,
    upper95_mismatch,
)
from tests.helpers import table, yes
from tests.properties import PROPERTY

# --- reference values (SPEC 2.1, 4 decimals) -------------------------------------------------

REFERENCE_VALUES = table("""
    0   200   0.0188   0/200
    1   200   0.0278   1/200
    5   200   0.0572   5/200
    0    30   0.1135   0/30
    0    60   0.0602   0/60
""", int, int, float)  # fails, n, upper95 rounded to 4 decimals


@pytest.mark.parametrize(("fails", "n", "expected"), REFERENCE_VALUES)
def test_reference_values(fails: int, n: int, expected: float) -> None:
    assert round(upper95(fails, n), 4) == expected


@pytest.mark.parametrize(("fails", "n", "expected"), REFERENCE_VALUES)
def test_reference_values_use_z_1_96_by_default(fails: int, n: int, expected: float) -> None:
    assert Z95 == 1.96
    assert upper95(fails, n) == upper95(fails, n, z=1.96)
    # A narrower z gives a visibly different (lower) bound: the default is not z=1.
    assert round(upper95(fails, n, z=1.0), 4) < expected


def test_no_runs_is_bound_one() -> None:
    assert upper95(0, 0) == 1.0


@pytest.mark.parametrize("n", [1, 2, 5, 12, 18, 20, 21, 31, 200, 1000], ids=lambda n: f"{n}/{n}")
def test_every_run_failing_is_bound_exactly_one(n: int) -> None:
    # fails = n: the observed rate is 1, and the bound lies in [fails/n, 1] = [1, 1].
    assert upper95(n, n) == 1.0


def test_clean_runs_bound_is_z_squared_over_n_plus_z_squared() -> None:
    # With no failures the Wilson upper limit reduces to z^2 / (n + z^2).
    for n in (1, 30, 60, 189, 200, 5000):
        assert upper95(0, n) == pytest.approx(1.96**2 / (n + 1.96**2), rel=1e-12)


# --- upper95_mismatch (tolerance 0.0005) -------------------------------------------------


@pytest.mark.parametrize(("offset", "mismatch"), table("""
     0.0       no    exact
    +0.0004    no    just-inside-above
    -0.0004    no    just-inside-below
    +0.00049   no    inside-by-a-hair-above
    -0.00049   no    inside-by-a-hair-below
    +0.00051   yes   outside-by-a-hair-above
    -0.00051   yes   outside-by-a-hair-below
    +0.0006    yes   just-outside-above
    -0.0006    yes   just-outside-below
    +0.5       yes   far-off
""", float, yes))
@pytest.mark.parametrize(
    ("fails", "n"), [(0, 200), (5, 200), (0, 30)], ids=["0/200", "5/200", "0/30"]
)
def test_upper95_mismatch_tolerance(fails: int, n: int, offset: float, mismatch: bool) -> None:
    assert UPPER95_TOLERANCE == 0.0005
    reported = upper95(fails, n) + offset
    assert upper95_mismatch(reported, fails, n) is mismatch


@pytest.mark.parametrize(("reported", "fails", "n", "mismatch"), table("""
    0.0188   0   200   no    reference-0/200
    0.0572   5   200   no    reference-5/200
    0.0278   5   200   yes   1/200-value-for-5/200
    0.0      0   200   yes   zero-for-0/200
    1.0      0     0   no    n=0-reported-one
    -        5   200   no    not-reported
""", float, int, int, yes))
def test_upper95_mismatch_literal_values(
    reported: float | None, fails: int, n: int, mismatch: bool
) -> None:
    assert upper95_mismatch(reported, fails, n) is mismatch


@PROPERTY
@given(data=st.data(), n=st.integers(min_value=1, max_value=100_000))
def test_a_4_decimal_rounded_bound_is_never_a_mismatch(data: st.DataObject, n: int) -> None:
    # The budget script writes upper95 rounded to 4 decimals; that rounding (<= 0.00005)
    # must never be mistaken for a mismatch.
    fails = data.draw(st.integers(min_value=0, max_value=n), label="fails")
    assert not upper95_mismatch(round(upper95(fails, n), 4), fails, n)


# --- runs_needed ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rate", "runs"),
    [
        pytest.param(0.02, 189, id="2%"),
        pytest.param(0.05, 73, id="5%"),
        pytest.param(0.10, 35, id="10%"),
        pytest.param(1.0, 1, id="100%"),
    ],
)
def test_runs_needed(rate: float, runs: int) -> None:
    assert runs_needed(rate) == runs


def test_runs_needed_for_2_percent_is_the_first_n_within_budget() -> None:
    assert upper95(0, 189) <= 0.02 < upper95(0, 188)


@pytest.mark.parametrize("rate", [0.0, -0.01], ids=["zero", "negative"])
def test_runs_needed_refuses_a_rate_of_zero_or_below(rate: float) -> None:
    with pytest.raises(ValueError, match="above 0"):
        runs_needed(rate)


@PROPERTY
@given(rate=st.floats(min_value=0.0005, max_value=0.999, allow_nan=False))
@example(rate=0.02)
@example(rate=0.05)
def test_runs_needed_is_the_smallest_clean_run_count_within_rate(rate: float) -> None:
    runs = runs_needed(rate)
    assert runs >= 1
    assert upper95(0, runs) <= rate < upper95(0, runs - 1)


# --- invariants (SPEC 2.4) ------------------------------------------------------------------


@st.composite
def fails_and_runs(draw: st.DrawFn, max_n: int = 1_000_000) -> tuple[int, int]:
    n = draw(st.integers(min_value=1, max_value=max_n), label="n")
    fails = draw(st.integers(min_value=0, max_value=n), label="fails")
    return fails, n


@PROPERTY
@given(fails_and_runs())
@example((0, 1))
@example((5, 5))
@example((12, 12))
@example((20, 20))
def test_upper95_lies_between_the_observed_rate_and_one(case: tuple[int, int]) -> None:
    fails, n = case
    bound = upper95(fails, n)
    assert fails / n <= bound <= 1.0


@PROPERTY
@given(fails_and_runs())
def test_upper95_is_positive_whenever_there_are_runs(case: tuple[int, int]) -> None:
    fails, n = case
    assert upper95(fails, n) > 0.0


@PROPERTY
@given(data=st.data(), n=st.integers(min_value=1, max_value=1_000_000))
def test_upper95_grows_with_fails_at_fixed_n(data: st.DataObject, n: int) -> None:
    fewer = data.draw(st.integers(min_value=0, max_value=n - 1), label="fewer")
    more = data.draw(st.integers(min_value=fewer + 1, max_value=n), label="more")
    low, high = upper95(fewer, n), upper95(more, n)
    assert low <= high
    if high < 1.0:  # strictly, wherever the larger one is not clipped at 1
        assert low < high


@PROPERTY
@given(fails_and_runs(max_n=10_000), st.integers(min_value=2, max_value=100))
@example((0, 1), 2)
@example((1, 2), 3)
@example((12, 12), 2)
def test_upper95_never_grows_with_n_at_a_fixed_proportion(case: tuple[int, int], k: int) -> None:
    fails, n = case
    assert upper95(k * fails, k * n) <= upper95(fails, n)


@PROPERTY
@given(fails_and_runs(max_n=10_000))
def test_upper95_shrinks_strictly_with_more_clean_runs(case: tuple[int, int]) -> None:
    fails, n = case
    # One more run that did not fail: same failures, more evidence, a lower bound.
    assert upper95(fails, n + 1) < upper95(fails, n)
