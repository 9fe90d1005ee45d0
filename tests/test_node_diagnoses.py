"""SPEC 2.4d, the board's side: each flaky or suspect node's diagnosis from the facts the
board holds (``board.diagnosis``): its latest measurement and its experiments, and what
CI's JUnit files show of it (per job, at the commits it was measured at, its failure
signatures), infrastructure failures left out. A constant number of queries."""

from __future__ import annotations

import pytest

from board import diagnosis
from board.diagnosis import node_diagnoses, node_diagnosis
from flakeboard import rules
from junit.ingest import junit_ingest
from junit.selectors import Window
from ledger.models import Node
from runs.ingest import report_ingest
from runs.models import Measurement
from tests.helpers import body, measurement
from tests.junit_files import junit_xml

NODE = "tests/test_a.py::test_a"
OTHER = "tests/test_a.py::test_b"
SEEDED = {"seeds": [9141], "controls": [9137], "seed_runs": 2, "seed_fails": 2,
          "control_runs": 2, "control_fails": 0,
          "command": f"python3 flakeboard_ci.py replay '{NODE}' --seed 9141"}
RESET = "ConnectionResetError: [Errno 104] Connection reset by peer"


def case(nodeid: str, outcome: str, message: str = "assert 1 == 2") -> tuple:
    return ("tests.test_a", nodeid.rpartition("::")[2], outcome, message)


def junit(suite, *cases, commit: str, job: str = "py3.12", **query) -> None:
    junit_ingest(suite=suite, body=junit_xml(*cases), actor="ci",
                 query={"commit": commit, "branch": "main", "job": job, **query})


def measured(suite, nodeid=NODE, *, commit="", experiments=None, **row) -> None:
    report_ingest(suite=suite, actor="ci", body=body(
        {"commit": commit, "measurements": [measurement(nodeid, **row)]}))
    if experiments is not None:
        Measurement.objects.filter(node__nodeid=nodeid).update(experiments=experiments)


def seeded(suite):
    measured(suite, n=20, fails=3, classification="flaky", experiments={"seeded": SEEDED})


def order_dependent(suite):
    measured(suite, n=20, fails=4, classification="order_dependent",
             cause={"role": "polluter", "nodes": [OTHER], "complete": True})


def timing(suite):
    measured(suite, n=100, fails=2, classification="flaky", experiments={"load": {
        "idle_n": 100, "idle_fails": 2, "load_n": 100, "load_fails": 31,
        "command": f"python3 flakeboard_ci.py replay '{NODE}' --stress --runs 100"}})


def job_specific(suite):
    for commit in ("c1", "c2", "c3"):
        junit(suite, case(NODE, "failed"), case(NODE, "passed"), commit=commit, job="py3.13")
        for job in ("py3.11", "py3.12"):
            for attempt in (1, 2, 3, 4):
                junit(suite, case(NODE, "passed"), commit=commit, job=job, attempt=attempt)


def ci_only(suite):
    measured(suite, n=200, fails=0, classification="stable", commit="c1")
    # Flaky in CI: one job's attempts at the commit failed it 3 times of 10.
    for attempt in range(1, 11):
        junit(suite, case(NODE, "failed" if attempt <= 3 else "passed"), commit="c1",
              attempt=attempt)


def external(suite):
    for commit in ("c1", "c2"):
        junit(suite, case(NODE, "failed", RESET), case(NODE, "passed"), commit=commit)


def unknown(suite):
    measured(suite, n=20, fails=3, classification="flaky", experiments={"skipped": "budget"})


BOARDS = [
    (order_dependent, rules.Category.ORDER_DEPENDENT,
     f"Order-dependent: fails only after {OTHER}.", None),
    (seeded, rules.Category.SEEDED, "2/2 replays at its failing seeds (9141) failed, 0/2 at "
     "the control seeds (9137).", SEEDED["command"]),
    (timing, rules.Category.TIMING, "2/100 failed idle, 31/100 under CPU load (Fisher's exact "
     "p=0.0000).", f"python3 flakeboard_ci.py replay '{NODE}' --stress --runs 100"),
    (job_specific, rules.Category.JOB_SPECIFIC, "3/6 flaky failures in CI job py3.13, 0/24 in "
     "the others (Fisher's exact p=0.0049).", None),
    (ci_only, rules.Category.CI_ONLY, "3/10 failed in CI's JUnit (at least 10.8% at 95%), "
     "0/200 measured at the same commits (at most 1.9% at 95%).", None),
    (external, rules.Category.EXTERNAL, "2/2 failures name the network or a service, most "
     "often “ConnectionResetError: [Errno <n>] Connection reset by peer”.", None),
    (unknown, rules.Category.UNKNOWN, None, None),
]


@pytest.mark.parametrize(("make", "category", "evidence", "command"), BOARDS,
                         ids=[board[1].value for board in BOARDS])
def test_each_board_diagnoses_its_node(suite, today, make, category, evidence, command):
    make(suite)
    diagnosis = node_diagnosis(suite, NODE, today=today)
    assert diagnosis.category is category
    assert diagnosis.evidence[:1] == ((evidence,) if evidence else ())
    assert diagnosis.command == command
    assert node_diagnoses(suite, today=today) == {NODE: diagnosis}


def test_unknown_says_what_was_tried(suite, today):
    unknown(suite)
    junit(suite, case(NODE, "failed"), case(NODE, "passed"), commit="c1")
    assert node_diagnosis(suite, NODE, today=today).tried == (
        "CI jobs", "failure signatures", "experiments cut short: --diagnose-budget ran out")


def test_the_latest_measurement_decides(suite, today):
    seeded(suite)
    measured(suite, n=20, fails=2, classification="flaky")
    assert node_diagnosis(suite, NODE, today=today).category is rules.Category.UNKNOWN


def test_an_infrastructure_failure_is_no_evidence(suite, today):
    # Every test of the file failed: the runner broke, and its resets say nothing.
    fillers = [case(f"tests/test_a.py::test_{i}", "failed", RESET) for i in range(12)]
    junit(suite, case(NODE, "failed", RESET), case(NODE, "passed"), *fillers, commit="c1")
    assert node_diagnosis(suite, NODE, today=today).category is rules.Category.UNKNOWN


def test_flaky_and_suspect_nodes_only_when_none_named(suite, today):
    measured(suite, "tests/test_a.py::test_stable", n=200, fails=0, classification="stable")
    measured(suite, "tests/test_a.py::test_suspect", n=200, fails=1)
    measured(suite, "tests/test_a.py::test_repeat", n=20, fails=0,
             classification="repeat_unsafe")
    junit(suite, case(NODE, "failed"), case(NODE, "passed"), case(OTHER, "failed"),
          commit="c1")  # OTHER failed, never passed: not flaky
    assert sorted(node_diagnoses(suite, today=today)) == [
        "tests/test_a.py::test_a", "tests/test_a.py::test_repeat",
        "tests/test_a.py::test_suspect"]


def test_named_nodes_are_diagnosed_whatever_they_are(suite, today):
    measured(suite, "tests/test_a.py::test_stable", n=200, fails=0, classification="stable")
    found = node_diagnoses(suite, ["tests/test_a.py::test_stable", "tests/nowhere.py::t"],
                           today=today)
    assert list(found) == ["tests/test_a.py::test_stable"]
    assert found["tests/test_a.py::test_stable"].category is rules.Category.UNKNOWN
    assert node_diagnosis(suite, "tests/nowhere.py::t", today=today) is None


def test_another_suites_facts_are_not_read(suite, other_suite, today):
    seeded(other_suite)
    measured(suite, n=20, fails=3, classification="flaky")
    assert node_diagnosis(suite, NODE, today=today).category is rules.Category.UNKNOWN


def test_a_constant_number_of_queries(suite, today, django_assert_max_num_queries):
    many = [f"tests/test_a.py::test_m{i}" for i in range(30)]
    report_ingest(suite=suite, actor="ci", body=body({"commit": "c1", "measurements": [
        measurement(nodeid, n=20, fails=2, classification="flaky") for nodeid in many]}))
    Measurement.objects.update(experiments={"seeded": SEEDED})
    for job in ("py3.12", "py3.13"):
        junit(suite, *[case(nodeid, outcome) for nodeid in many
                       for outcome in ("failed", "passed")], commit="c1", job=job)
    with django_assert_max_num_queries(4):
        found = node_diagnoses(suite, today=today)
    assert len(found) == 30
    assert {diagnosis.category for diagnosis in found.values()} == {rules.Category.SEEDED}
    with django_assert_max_num_queries(4):
        assert node_diagnoses(suite, many[:1], today=today)[many[0]].category == "seeded"


def test_the_database_picks_the_measurements_the_rule_does(suite, today):
    kinds = [None, *rules.Classification]
    rows = [measurement(f"tests/test_a.py::test_{kind}_{fails}", n=20, fails=fails,
                        **({"classification": kind.value} if kind else {}))
            for kind in kinds for fails in (0, 1)
            if kind is not rules.Classification.ORDER_DEPENDENT]
    report_ingest(suite=suite, actor="ci", body=body(rows))
    expected = {row["nodeid"] for row in rows
                if rules.needs_diagnosis(row.get("classification"), row["fails"])}
    assert set(node_diagnoses(suite, today=today)) == expected
    assert "tests/test_a.py::test_None_0" not in expected


def test_a_jobs_flaky_failures_are_its_failures_at_commits_it_also_passed(suite, today):
    """Per job, a failure is a flaky one when a file of the same commit and job passed the
    test: the same file, or another attempt. A job that only failed it at a commit has no
    flaky failure there, and an infrastructure failure's file counts nothing."""
    job_specific(suite)  # py3.13 flaky in each of three commits' one file: 3 of 6 runs
    junit(suite, case(NODE, "failed"), commit="c4", job="py3.13")
    junit(suite, case(NODE, "passed"), commit="c4", job="py3.13", attempt=2)
    junit(suite, case(NODE, "failed"), commit="c5", job="py3.12")
    fillers = [case(f"tests/test_a.py::test_{i}", "failed", RESET) for i in range(12)]
    junit(suite, case(NODE, "failed"), case(NODE, "passed"), *fillers, commit="c6",
          job="py3.11")
    (node,) = Node.objects.filter(nodeid=NODE).values_list("pk", flat=True)
    facts = diagnosis._ci_facts(suite, [node], Window(today), {})[node]
    assert facts.jobs == (rules.JobFigures("py3.11", 12, 0), rules.JobFigures("py3.12", 13, 0),
                          rules.JobFigures("py3.13", 8, 4))
