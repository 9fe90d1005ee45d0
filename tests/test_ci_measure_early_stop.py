"""`measure` stops a target early once it is over budget with 95% confidence and no
remaining run could bring it back (at least 3 failures, Wilson lower bound over the budget,
the upper bound at the full n over it), never on one unlucky run; --exact runs every run.
The budget is the policy's: --max-upper-rate, else a full ledger's, else the script's."""

from __future__ import annotations

import json

import pytest

from flakeboard.rules import upper95
from tests.measure_projects import SEED_BASE, make_project, measure, report, seed_test

pytestmark = pytest.mark.slow  # each test starts a real process

QUARTERS = "seed % 4 == 1"  # fails runs 0, 4, 8, ...: 9137 % 4 == 1


def where_it_stops(fails_when, runs, rate=0.02):
    """The (n, fails) the early stop rule gives, worked out from the rules' bound alone:
    the Wilson lower bound of f in n is 1 - upper95(n - f, n)."""
    fails = 0
    for n in range(1, runs + 1):
        fails += bool(eval(fails_when, {}, {"seed": SEED_BASE + n - 1}))  # noqa: S307
        lower = 1 - upper95(n - fails, n)
        if n < runs and fails >= 3 and upper95(fails, runs) > rate and lower > rate:
            return n, fails
    return runs, fails


def test_a_target_over_budget_stops_at_the_run_that_proves_it(tmp_path):
    project = make_project(tmp_path, {"test_q.py": seed_test("test_quarters", QUARTERS)},
                           ["test_q.py::test_quarters"])
    done = measure(project, "--workers", "2", FLAKE_RUNS="200")
    assert done.returncode == 1, done.stderr
    row = report(project)["test_q.py::test_quarters"]
    assert (row["n"], row["fails"]) == where_it_stops(QUARTERS, 200) == (9, 3)
    assert row["upper95"] == round(upper95(3, 9), 4)
    assert "stopped early after 9 of 200 runs" in done.stderr
    assert done.stdout == (f"FAIL test_q.py::test_quarters: upper95={row['upper95']} > 0.02, "
                           f"no quarantine entry\n")


def test_a_single_failure_never_stops_a_target(tmp_path):
    # Its first run fails: at n = 60 that alone decides the outcome, and proves nothing.
    project = make_project(tmp_path, {"test_once.py": seed_test("test_first", "seed == 9137")},
                           ["test_once.py::test_first"])
    done = measure(project, "--runs", "60")
    assert upper95(1, 60) > 0.02
    row = report(project)["test_once.py::test_first"]
    assert (row["n"], row["fails"]) == (60, 1)
    assert "stopped early" not in done.stderr
    assert done.stderr.startswith("flaky           test_once.py::test_first: 1/60 failed")


def test_two_failures_close_together_do_not_stop_it_either(tmp_path):
    project = make_project(tmp_path, {"test_two.py": seed_test(
        "test_twice", "seed in (9137, 9138)")}, ["test_two.py::test_twice"])
    measure(project, "--runs", "50")
    assert report(project)["test_two.py::test_twice"]["n"] == 50


def test_exact_runs_every_run_of_every_target(tmp_path):
    project = make_project(tmp_path, {"test_e.py": seed_test("test_quarters", QUARTERS)
                                      + seed_test("test_broken", "True")},
                           ["test_e.py::test_quarters", "test_e.py::test_broken"])
    done = measure(project, "--exact", "--runs", "20")
    rows = report(project)
    assert (rows["test_e.py::test_quarters"]["n"], rows["test_e.py::test_quarters"]["fails"]) \
        == (20, 5)
    assert (rows["test_e.py::test_broken"]["n"], rows["test_e.py::test_broken"]["fails"]) == \
        (20, 20)
    assert "stopped early" not in done.stderr


def test_a_looser_budget_from_the_option_keeps_measuring(tmp_path):
    project = make_project(tmp_path, {"test_q.py": seed_test("test_quarters", QUARTERS)},
                           ["test_q.py::test_quarters"])
    done = measure(project, "--runs", "100", "--max-upper-rate", "0.4")
    row = report(project)["test_q.py::test_quarters"]
    # A quarter failing is within a 40% budget: nothing decides it early.
    assert (row["n"], row["fails"]) == where_it_stops(QUARTERS, 100, rate=0.4) == (100, 25)
    assert done.stdout.startswith("FAIL test_q.py::test_quarters: upper95=0.343 > 0.4,")
    assert done.returncode == 1  # the script's min_runs (200) still applies


def test_a_full_ledger_gives_the_policy(tmp_path):
    project = make_project(tmp_path, {"test_q.py": seed_test("test_quarters", QUARTERS)
                                      + seed_test("test_ok")},
                           ["test_q.py::test_quarters", "test_q.py::test_ok"])
    (project / "full.json").write_text(json.dumps({
        "suite": {"slug": "acme"}, "entries": [],
        "policy": {"max_upper_rate": 0.45, "min_runs": 40, "max_quarantined_share": 0.05,
                   "max_quarantine_days": 30}}))
    done = measure(project, "--runs", "40", "--ledger", "full.json")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "OK   test_q.py::test_quarters: upper95=0.4019 over 40 runs",
        "OK   test_q.py::test_ok: upper95=0.0876 over 40 runs"]
