"""The standalone client's own arithmetic, held to the board's: its Wilson bounds equal
the rules' `upper95` (and the lower twin mirrors it), its early stop only ends a target
that could not pass at the full n, and its gate prints the budget script's lines."""

from __future__ import annotations

import contextlib
import io
import random

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from flakeboard.rules import upper95
from tests import article_budget_script
from tests.ci_client_view import load_client
from tests.properties import PROPERTY

client = load_client()

runs = st.integers(min_value=1, max_value=100_000)
rates = st.floats(min_value=0.001, max_value=0.5)


@st.composite
def counts(draw, high=100_000):
    n = draw(st.integers(min_value=1, max_value=high))
    return draw(st.integers(min_value=0, max_value=n)), n


@PROPERTY
@given(counts())
def test_the_clients_upper_bound_is_the_rules(count):
    fails, n = count
    assert client.upper95(fails, n) == upper95(fails, n)


def test_no_runs_bound_the_same_way():
    assert client.upper95(0, 0) == upper95(0, 0) == 1.0
    assert client.lower95(0, 0) == 0.0


@PROPERTY
@given(counts())
def test_the_lower_bound_mirrors_the_upper(count):
    fails, n = count
    lower = client.lower95(fails, n)
    assert 0.0 <= lower <= fails / n <= client.upper95(fails, n) <= 1.0
    # The interval for the passes is the failures' interval reflected.
    assert lower == pytest.approx(1 - upper95(n - fails, n), abs=1e-12)


@PROPERTY
@given(counts(high=2000))
def test_the_lower_bound_grows_with_the_failures(count):
    fails, n = count
    assume(fails < n)
    assert client.lower95(fails + 1, n) >= client.lower95(fails, n)


@st.composite
def stopping_points(draw):
    """A target of ``total`` runs, ``done`` of them run with ``fails`` failures."""
    total = draw(st.integers(min_value=1, max_value=5000))
    done = draw(st.integers(min_value=1, max_value=total))
    return draw(st.integers(min_value=0, max_value=done)), done, total


@PROPERTY
@given(stopping_points(), rates, st.randoms(use_true_random=False))
def test_an_early_stopped_target_could_not_have_passed_at_the_full_n(point, rate, rnd):
    fails, done, total = point
    assume(client.stops_early(fails, done, total, rate))
    # Whatever the remaining runs would have done, the bound at the full n is over budget.
    for final in (fails, rnd.randint(fails, fails + total - done), fails + total - done):
        assert upper95(final, total) > rate
    # And the runs done are evidence: over budget with 95% confidence, not one bad run.
    assert fails >= 3
    assert client.lower95(fails, done) > rate


@PROPERTY
@given(stopping_points(), rates)
def test_one_or_two_failures_never_stop_a_target(point, rate):
    _, done, total = point
    for fails in (1, 2):
        assume(fails <= done)
        assert not client.stops_early(fails, done, total, rate)


def test_one_failure_on_the_first_run_decides_the_outcome_but_does_not_stop():
    # At the defaults a single failure already rules out a pass at n = 200 ...
    assert upper95(1, 200) > 0.02
    # ... and yet it is no evidence: the measurement goes on.
    assert not client.stops_early(1, 1, 200, 0.02)
    assert client.stops_early(3, 3, 200, 0.02)


@PROPERTY
@given(st.lists(st.booleans(), min_size=1, max_size=300), rates, st.booleans(),
       st.randoms(use_true_random=False))
def test_counts_do_not_depend_on_the_order_results_arrive(outcomes, rate, early, rnd):
    """Runs finish out of order on parallel workers; the report counts runs 0..n-1."""
    target = client.Target("t.py::test", len(outcomes), 9137)
    order = list(range(len(outcomes)))
    rnd.shuffle(order)
    for index in order:
        target.record(index, client.Outcome(outcomes[index], 0.0, "", True), early, rate)
    fails = n = 0
    for failed in outcomes:
        fails, n = fails + failed, n + 1
        if early and n < len(outcomes) and client.stops_early(fails, n, len(outcomes), rate):
            break
    assert (target.done, target.fails) == (n, fails)
    assert target.finished


# --- the gate's lines, against the script's own ---------------------------------------

ENTRY = {"class": "flake", "owner": "@finley", "evidence": "ci/run-1"}
TODAY = "2026-10-15"


def row_of(fails, n):
    return {"nodeid": "t.py::test", "n": n, "fails": fails,
            "upper95": round(upper95(fails, n), 4), "seed_base": 9137}


def gated_by_both(row, expires):
    """The client's gate lines and exit code for one row, and the script's."""
    ledger = {row["nodeid"]: dict(ENTRY, expires=expires)} if expires else {}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = article_budget_script.gate([row], ledger, TODAY)
    return client.gate_lines([row], ledger, TODAY, 0.02, 200), (
        printed.getvalue().splitlines(), code)
GATE_CASES = {
    "within budget at min_runs: OK": ({"n": 200, "fails": 0}, None),
    "within budget under min_runs: FAIL": ({"n": 199, "fails": 0}, None),
    "over budget, no entry: FAIL": ({"n": 200, "fails": 5}, None),
    "over budget, quarantined: WARN": ({"n": 200, "fails": 5}, "2026-10-15"),
    "expired entry: FAIL": ({"n": 200, "fails": 0}, "2026-10-14"),
    "early stopped, quarantined: WARN": ({"n": 3, "fails": 3}, "2026-12-01"),
}


@pytest.mark.parametrize(("row", "expires"), GATE_CASES.values(), ids=GATE_CASES.keys())
def test_the_gate_prints_the_scripts_lines(row, expires):
    ours, script = gated_by_both(row_of(row["fails"], row["n"]), expires)
    assert ours == script


def test_random_reports_gate_alike():
    rnd = random.Random(16)
    for _ in range(200):
        n = rnd.randint(1, 400)
        expires = rnd.choice([None, "2026-10-14", TODAY, "2026-11-01"])
        ours, script = gated_by_both(row_of(rnd.randint(0, n), n), expires)
        assert ours == script


def test_the_gate_fails_on_any_fail_and_lists_every_row():
    rows = [dict(row_of(fails, 200), nodeid=f"t.py::test_{i}")
            for i, fails in enumerate([0, 9, 0])]
    lines, code = client.gate_lines(rows, {}, TODAY, 0.02, 200)
    assert code == 1
    assert [line[:4] for line in lines] == ["OK  ", "FAIL", "OK  "]
    assert client.gate_lines(rows[::2], {}, TODAY, 0.02, 200)[1] == 0
