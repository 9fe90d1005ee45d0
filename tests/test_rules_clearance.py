"""Release when fixed (issue 20), the arithmetic: when an entry is ready to clear, and what
a fresh measurement needs to clear it (its size, its chance to pass at the node's rate).

Pure rules: tables for the issue's figures, hypothesis for the invariants.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from flakeboard import rules
from tests.helpers import table, yes
from tests.properties import PROPERTY

# --- ready to clear ----------------------------------------------------------------------

# Outcomes since the entry was created, oldest first: + within budget, x not; . none.
READY = table("""
    .        3   no    nothing-since-creation
    +        3   no    one-clean
    ++       3   no    two-clean
    +++      3   yes   three-clean
    x+++     3   yes   a-failure-before-the-last-three
    +++x     3   no    the-latest-failed
    ++x++    3   no    a-failure-among-the-last-three
    ++++++   3   yes   six-clean
    +        1   yes   k-1-one-clean
    x        1   no    k-1-one-failed
    +++++    5   yes   k-5-five-clean
    ++++     5   no    k-5-four-clean
""", str, int, yes)


@pytest.mark.parametrize(("outcomes", "k", "ready"), READY)
def test_ready_to_clear(outcomes, k, ready):
    clean = [mark == "+" for mark in outcomes.strip(".")]
    assert rules.ready_to_clear(clean, k) is ready


def test_nothing_measured_since_creation_is_not_ready():
    assert rules.ready_to_clear([], 1) is False
    assert rules.ready_to_clear([], rules.CLEAR_AFTER_DEFAULT) is False


def test_k_is_one_or_more():
    with pytest.raises(ValueError):
        rules.ready_to_clear([True], 0)


outcome_lists = st.lists(st.booleans(), max_size=40)
counts = st.integers(min_value=1, max_value=rules.CLEAR_AFTER_MAX)


@PROPERTY
@given(outcome_lists, counts)
def test_ready_is_a_clean_streak_of_k(outcomes, k):
    assert rules.ready_to_clear(outcomes, k) == (rules.clean_streak(outcomes) >= k)


@PROPERTY
@given(outcome_lists, counts)
def test_a_failing_measurement_unsets_ready_and_k_clean_ones_set_it(outcomes, k):
    assert not rules.ready_to_clear([*outcomes, False], k)
    assert rules.ready_to_clear([*outcomes, *[True] * k], k)


@PROPERTY
@given(outcome_lists, counts)
def test_fewer_than_k_measurements_are_never_ready(outcomes, k):
    assert not rules.ready_to_clear(outcomes[: k - 1], k)


@PROPERTY
@given(outcome_lists, counts)
def test_the_trail_an_entry_keeps_decides_as_the_whole_history_would(outcomes, k):
    trail: list[bool] = []
    for seen in outcomes:
        trail = rules.trail_after(trail, seen)
        assert len(trail) <= rules.CLEAR_AFTER_MAX
    assert rules.ready_to_clear(trail, k) == rules.ready_to_clear(outcomes, k)


WITHIN = table("""
    200   0   yes   0-of-200
    189   0   no    too-few-runs-189
    200   1   no    1-of-200-over-2%
    400   2   yes   2-of-400-within
""", int, int, yes)


@pytest.mark.parametrize(("n", "fails", "within"), WITHIN)
def test_within_budget_is_step_2_of_the_gate(n, fails, within):
    assert rules.within_budget(n, fails, rules.Policy()) is within


# --- what it takes to clear --------------------------------------------------------------


def test_the_issue_figures():
    """189 clean runs bring the bound within 2%; min_runs makes it 200; at p = 2.5% such a
    measurement (no failure allowed) passes with a chance of (1 - p)^200, 0.6%."""
    outlook = rules.clearance_outlook(rules.Policy(), rate=0.025)
    assert (outlook.clean_runs, outlook.min_runs, outlook.runs) == (189, 200, 200)
    assert outlook.allowed_failures == 0
    assert outlook.chance == pytest.approx(0.975**200, rel=1e-12)
    assert round(outlook.chance * 100, 1) == 0.6


ALLOWED = table("""
    200    0.02   0    none-at-200
    189    0.02   0    none-at-189
    188    0.02   -    not-even-none-at-188
    400    0.02   2    two-at-400
    1000   0.02   11   eleven-at-1000
    200    0.06   5    five-at-6%
    10     1.0    10   all-at-100%
""", int, float, int)


@pytest.mark.parametrize(("n", "rate", "allowed"), ALLOWED)
def test_allowed_failures(n, rate, allowed):
    assert rules.allowed_failures(n, rate) == allowed
    if allowed is not None:
        assert rules.upper95(allowed, n) <= rate
        assert allowed == n or rules.upper95(allowed + 1, n) > rate


def test_no_rate_no_chance_and_a_rate_from_the_pooled_runs():
    assert rules.clearance_outlook(rules.Policy(), rate=None).chance is None
    assert rules.recent_rate([]) is None and rules.recent_rate([(0, 0)]) is None
    assert rules.recent_rate([(200, 5), (200, 0)]) == 5 / 400


rates = st.floats(min_value=0, max_value=1, allow_nan=False)
sizes = st.integers(min_value=1, max_value=3000)
budgets = st.floats(min_value=0.0001, max_value=1, allow_nan=False)


@PROPERTY
@given(rates, sizes, budgets)
def test_the_chance_is_a_probability(p, n, budget):
    assert 0 <= rules.pass_chance(p, n, rules.allowed_failures(n, budget)) <= 1


@PROPERTY
@given(rates, rates, sizes, budgets)
@example(0.02, 0.025, 200, 0.02)
@example(0.0625, 0.3125, 2941, 0.5)  # both near 1: summed from below, 1e-12 apart
def test_the_chance_never_grows_with_the_rate(p, q, n, budget):
    low, high = sorted((p, q))
    allowed = rules.allowed_failures(n, budget)
    assert rules.pass_chance(high, n, allowed) <= rules.pass_chance(low, n, allowed) + 1e-12


@PROPERTY
@given(rates, sizes)
def test_with_no_failure_allowed_the_chance_is_all_runs_passing(p, n):
    assert rules.pass_chance(p, n, 0) == pytest.approx((1 - p) ** n, rel=1e-9, abs=1e-300)


@PROPERTY
@given(rates, st.integers(min_value=1, max_value=60), st.data())
def test_the_chance_is_the_binomial_sum(p, n, data):
    allowed = data.draw(st.integers(min_value=0, max_value=n))
    exact = math.fsum(math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(allowed + 1))
    assert rules.pass_chance(p, n, allowed) == pytest.approx(exact, rel=1e-9, abs=1e-12)


@PROPERTY
@given(st.floats(min_value=0.0001, max_value=0.5), st.data())
def test_a_measurement_too_small_for_the_bound_never_passes(budget, data):
    n = data.draw(st.integers(min_value=1, max_value=rules.runs_needed(budget) - 1))
    assert rules.upper95(0, n) > budget
    assert rules.allowed_failures(n, budget) is None
    assert rules.pass_chance(0.0, n, None) == 0.0


@PROPERTY
@given(budgets, st.integers(min_value=1, max_value=5000), rates)
def test_the_size_to_measure_is_min_runs_or_the_clean_runs(budget, min_runs, p):
    policy = rules.Policy(max_upper_rate=budget, min_runs=min_runs)
    outlook = rules.clearance_outlook(policy, rate=p)
    assert outlook.runs == max(min_runs, rules.runs_needed(budget))
    assert outlook.allowed_failures is not None  # at that size no failure is within
    assert rules.within_budget(outlook.runs, outlook.allowed_failures,
                         rules.Policy(max_upper_rate=budget, min_runs=min_runs))


# --- what counts toward clearing, and what CI saw since ----------------------------------

CLEAN = table("""
    200   0   -                 yes   a-measurement-with-no-classification
    200   0   stable            yes   stable
    200   0   repeat_unsafe     yes   repeat-unsafe-measured-a-process-per-run
    400   2   flaky             yes   flaky-within-budget
    200   0   order_dependent   no    a-victim-passes-on-its-own
    200   3   broken            no    broken
    200   1   stable            no    over-budget-whatever-it-is-called
""", int, int, str, yes)


@pytest.mark.parametrize(("n", "fails", "kind", "clean"), CLEAN)
def test_a_clean_measurement_is_within_budget_and_no_victim(n, fails, kind, clean):
    classification = rules.Classification(kind) if kind and kind != "-" else None
    assert rules.clean_measurement(n, fails, classification, rules.Policy()) is clean


# A node's history since its entry was made, in the order the uploads arrived: a measurement
# (clean or not), or a failure CI saw (a JUnit file or a gate batch). Measurements are
# stored in time order; a sighting may be stored with an earlier instant (a backfill).
events = st.lists(st.one_of(st.booleans(), st.tuples(st.sampled_from(["junit", "gate"]),
                                                   st.integers(0, 60))), max_size=60)


def instant(minute: int) -> str:
    return f"2026-12-04T10:{minute:02d}:00.000000+00:00"


def trail_of(history):
    """The trail the history leaves, and the history in time order (a tie: arrival)."""
    trail: list[dict] = []
    timed = []
    for arrival, seen in enumerate(history):
        if isinstance(seen, bool):
            at = arrival  # each measurement is the latest when it is stored
            trail = rules.trail_after(trail, {"n": 200, "fails": 0, "clean": seen,
                                              "at": instant(at)})
        else:
            source, at = seen[0], min(seen[1], arrival)  # never after its own arrival
            trail = rules.trail_after_ci_failure(trail, source, f"c{arrival}", instant(at))
        timed.append((at, arrival, seen))
        assert len(trail) <= rules.CLEAR_AFTER_MAX
    return trail, [seen for _, _, seen in sorted(timed)]


@PROPERTY
@given(events, counts)
def test_never_ready_while_ci_saw_the_node_fail_since_the_last_k_clean_measurements(history, k):
    trail, in_time = trail_of(history)
    ready = rules.ready_to_clear([seen["clean"] for seen in trail], k)
    last = in_time[-k:]
    assert ready == (len(last) == k and all(seen is True for seen in last))
    if in_time and not isinstance(in_time[-1], bool):
        assert not ready and rules.last_ci_failure(trail)["ci"]
    else:
        assert rules.last_ci_failure(trail) is None


def test_failures_ci_saw_in_a_row_are_one_sighting_counted():
    trail, _ = trail_of([True, True, ("junit", 2), ("gate", 3), ("junit", 4)])
    assert [seen.get("ci") for seen in trail] == [None, None, "junit"]
    assert trail[-1]["count"] == 3 and trail[-1]["commit"] == "c4"
    assert trail[-1]["clean"] is False
    assert [seen["n"] for seen in trail if rules.is_measurement(seen)] == [200, 200]


def test_a_backfilled_failure_takes_its_place_by_time():
    # CI's failure from before the fix, stored after three clean measurements: no reset.
    trail, _ = trail_of([False, True, True, True, ("junit", 0)])
    assert [seen.get("ci") for seen in trail] == [None, "junit", None, None, None]
    assert rules.ready_to_clear([seen["clean"] for seen in trail], 3)


# A trail's steps as uploads leave them: a measurement of a report (or one kept without
# its report's id, as older trails and hand-made ones hold), or a failure CI saw.
steps = st.lists(st.one_of(
    st.tuples(st.just("measured"), st.booleans()),
    st.just(("measured without report", True)),
    st.tuples(st.sampled_from(["junit", "gate"]), st.integers(0, 60)),
), max_size=60)


def trail_with_reports(history) -> tuple[list[dict], list[int]]:
    """The trail a history leaves, and the reports its measurements came in, in order."""
    trail: list[dict] = []
    reports = []
    for arrival, (kind, detail) in enumerate(history):
        if kind == "measured":
            reports.append(1000 + arrival)
            seen = {"report": reports[-1], "n": 200, "fails": 0 if detail else 9,
                    "classification": None, "clean": detail, "at": instant(arrival)}
            trail = rules.trail_after(trail, seen)
        elif kind == "measured without report":
            trail = rules.trail_after(trail, {"n": 200, "fails": 0, "clean": True})
        else:
            trail = rules.trail_after_ci_failure(trail, kind, f"c{arrival}",
                                                 instant(min(detail, arrival)))
    return trail, reports


@PROPERTY
@given(steps)
def test_every_report_a_trail_cites_is_found_whatever_its_steps(history):
    trail, reports = trail_with_reports(history)
    found = rules.trail_reports(trail)
    assert found == [seen["report"] for seen in trail if "report" in seen]
    # the latest reports measured, in order: a failure CI saw, kept among them, cites none
    assert found == (reports[-len(found):] if found else [])
    assert all(rules.step_report(seen) is None for seen in trail if "ci" in seen)


def test_a_failure_ci_saw_cites_no_report():
    trail, _ = trail_of([True, ("junit", 1), ("gate", 2)])
    assert [rules.step_report(seen) for seen in trail] == [None, None]
    assert rules.trail_reports(trail) == []
    assert rules.step_report({"report": 7, "n": 200, "fails": 0, "clean": True}) == 7
