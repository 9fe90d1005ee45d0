"""Which nodes are new at a commit (SPEC 2.4b, docs/new-tests.md): a node is new while the
board holds no evidence for it from an earlier commit (no measurement, no signal record,
no JUnit result). The rule (``rules.is_new``), the first evidence commit every upload keeps
on the node, and the tiers lookup that answers it (``POST .../tiers?commit=``)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakeboard import rules
from junit.ingest import junit_ingest
from ledger.models import Node
from ledger.quarantine import quarantine_create
from ledger.selectors import tiers_and_births
from runs.ingest import report_ingest, signals_ingest
from runs.models import Report
from runs.results import summary_lines
from tests.api_http import API, new_token
from tests.helpers import body, measurement, record
from tests.junit_files import junit_xml
from tests.properties import PROPERTY, db_property, rolled_back

A, B, C = (f"tests/test_birth.py::test_{name}" for name in "abc")


@pytest.mark.parametrize(("first", "commit", "new"), [
    (None, "c1", True),  # no evidence at all
    ("c1", "c1", True),  # its first evidence came at this commit: a rerun of its birth
    ("c1", "c2", False),  # evidence from another, earlier commit
    ("", "c1", False),  # evidence from before first commits were kept
    ("", "", False),  # evidence without a commit: a node with evidence is never new
    (None, "", True),  # no evidence at all
])
def test_the_rule(first, commit, new):
    assert rules.is_new(first, commit) is new


@pytest.mark.parametrize(("rate", "runs", "chance"), [
    (0.1, 30, 0.9576), (0.2, 30, 0.9988), (0.05, 30, 0.7854), (0.1, 3, 0.271), (0.0, 30, 0.0),
    (1.0, 3, 1.0),
])
def test_the_chance_the_guard_catches_a_flaky_test(rate, runs, chance):
    assert rules.catch_chance(rate, runs) == pytest.approx(chance, abs=5e-5)


@given(rate=st.floats(min_value=0.001, max_value=0.999), runs=st.integers(3, 999))
def test_more_runs_catch_more(rate, runs):
    assert rules.catch_chance(rate, runs + 1) >= rules.catch_chance(rate, runs)
    assert rules.catch_chance(rate, runs) >= rate  # never below a single run's chance



@PROPERTY
@given(st.lists(st.sampled_from(["c1", "c2", "c3"]), max_size=8),
       st.sampled_from(["c1", "c2", "c3"]))
def test_a_node_is_new_only_at_the_commit_of_its_first_evidence(history, commit):
    first = None
    for seen_at in history:
        first = rules.first_commit_after(first, seen_at)
    # New at a commit: no evidence at all, or none before the commit's own.
    assert rules.is_new(first, commit) == (not history or history[0] == commit)


def evidence(suite, kind: str, node: str, commit: str) -> None:
    """One upload of ``kind`` naming ``node`` at ``commit``, through its service."""
    if kind == "report":
        report_ingest(suite=suite, body=body([measurement(node)]), actor="ci",
                      query={"commit": commit})
    elif kind == "signals":
        signals_ingest(suite=suite, body=body([record(node)]), actor="ci",
                       query={"commit": commit, "patch": f"p-{commit}"})
    else:
        path, _, name = node.partition("::")
        junit_ingest(suite=suite, body=junit_xml((path[:-3].replace("/", "."), name, "passed")),
                     actor="ci", query={"commit": commit, "job": "py312", "branch": "main"})


EVENTS = st.lists(st.tuples(st.sampled_from(["report", "signals", "junit"]),
                            st.sampled_from([A, B, C]), st.sampled_from(["c1", "c2", "c3"])),
                  max_size=6)


@given(history=EVENTS, commit=st.sampled_from(["c1", "c2", "c3"]))
@db_property(40)
def test_every_upload_keeps_a_nodes_first_evidence(roomy, today, history, commit):
    with rolled_back():
        # A cause's test and a node quarantined by hand have no evidence: new everywhere.
        quarantine_create(suite=roomy, nodeid=C, owner="@finley", evidence="ci/run-1",
                          expires=today + timedelta(days=5), actor="@finley", today=today)
        for kind, node, at in history:
            evidence(roomy, kind, node, at)
        _, births = tiers_and_births(roomy, [A, B, C])
        for node, first in zip([A, B, C], births, strict=True):
            seen = [at for _, named, at in history if named == node]
            assert rules.is_new(first, commit) == (not seen or seen[0] == commit), (node, seen)


@pytest.fixture
def roomy(suite):
    suite.max_quarantined_share = 1.0
    suite.save()
    return suite


def test_a_guess_merged_into_the_true_node_brings_its_earlier_evidence(roomy):
    # A test in a folder with a dot: its JUnit id is a guess until the gate names it.
    true = "tests/api.v2/test_users.py::test_create"
    guess = "tests/api/v2/test_users.py::test_create"
    xml = junit_xml(("tests.api.v2.test_users", "test_create", "passed"))
    junit_ingest(suite=roomy, body=xml, actor="ci", query={"commit": "c1", "job": "j"})
    signals_ingest(suite=roomy, body=body([record(true)]), actor="ci",
                   query={"commit": "c2", "patch": "p"})
    assert Node.objects.get(nodeid=true).first_commit == "c2"
    junit_ingest(suite=roomy, body=xml, actor="ci", query={"commit": "c3", "job": "j"})
    assert not Node.objects.filter(nodeid=guess).exists()
    # Its first evidence was the guess's, at c1: not new at c2, where the gate first ran it.
    assert Node.objects.get(nodeid=true).first_commit == "c1"


def test_the_tiers_lookup_says_which_nodes_are_new_at_a_commit(board, roomy):
    evidence(roomy, "report", A, "c1")
    evidence(roomy, "junit", B, "c2")
    read = new_token(roomy, "read")

    def new_at(commit):
        answer = board.post(f"{API}/suites/{roomy.slug}/tiers", body([A, B, C]), token=read,
                            query={"commit": commit} if commit else None)
        assert answer.status == 200, answer.raw
        return [row["new"] for row in answer.json["tiers"]]

    assert new_at("c1") == [True, False, True]
    assert new_at("c2") == [False, True, True]
    assert new_at("c9") == [False, False, True]
    assert new_at(None) == [None, None, None]  # without a commit, nothing is said


def guard_row(node: str, n: int, fails: int, **extra) -> dict:
    return measurement(node, n=n, fails=fails, new_test=True, **extra)


def judged(outcome) -> dict[str, tuple[str, str]]:
    return {row["nodeid"]: (row["status"], row["reason"]) for row in outcome.rows}


def test_the_guard_judges_the_new_tests_of_a_pull_request(roomy):
    """A PR adds three tests, measured 30 times each by the guard: the stable one passes,
    the one failing a fifth of its runs FAILs new_test_flaky, the one always failing fails
    as any failure. A guard row for a test the board already knew is gated as any other."""
    evidence(roomy, "report", A, "main-1")  # A existed before the PR
    stable, flaky, broken = (f"tests/test_pr.py::test_{name}" for name in
                             ("stable", "flaky", "broken"))
    rows = [guard_row(stable, 30, 0), guard_row(flaky, 30, 6), guard_row(broken, 30, 30),
            guard_row(A, 30, 0)]
    outcome = report_ingest(suite=roomy, body=body(rows), actor="ci", query={"commit": "pr-1"})
    assert judged(outcome) == {
        stable: ("OK", "new_test_clean"),
        flaky: ("FAIL", "new_test_flaky"),
        broken: ("FAIL", "over_budget"),
        A: ("FAIL", "too_few_runs"),  # not new: 30 runs are no budget claim
    }
    assert (outcome.upload.status, outcome.upload.reason) == ("FAIL", "new_test_flaky")
    lines = summary_lines(outcome)
    assert (f"OK   {stable}: new_test_clean (new: 0/30 failed, rate ≤ 11.4% at 95%; not a "
            "budget claim)") in lines
    assert f"FAIL {flaky}: new_test_flaky (new: 6/30 failed, rate ≤ 37.3% at 95%" in "\n".join(
        lines)


def test_a_rerun_at_the_birth_commit_adds_to_the_guards_evidence(roomy):
    node = "tests/test_pr.py::test_rare"
    first = report_ingest(suite=roomy, body=body([guard_row(node, 30, 0, seed_base=1)]),
                          actor="ci", query={"commit": "pr-2"})
    assert judged(first)[node] == ("OK", "new_test_clean")
    # A second run of the guard at the same commit: still its birth, and the runs pool, so
    # one failure among them is a flip, whatever the lucky first run said.
    again = report_ingest(suite=roomy, body=body([guard_row(node, 30, 1, seed_base=31)]),
                          actor="ci", query={"commit": "pr-2"})
    assert judged(again)[node] == ("FAIL", "new_test_flaky")
    # At the next commit the test is no longer new: the guard no longer judges it.
    later = report_ingest(suite=roomy, body=body([guard_row(node, 30, 0, seed_base=1)]),
                          actor="ci", query={"commit": "pr-3"})
    assert judged(later)[node] == ("FAIL", "too_few_runs")


def test_the_report_page_says_what_the_guards_runs_show(roomy, client_for, lead):
    outcome = report_ingest(suite=roomy, body=body([guard_row(B, 30, 0)]), actor="ci",
                            query={"commit": "pr-4"})
    page = client_for(lead).get(f"/suites/{roomy.slug}/reports/{outcome.upload.pk}/")
    assert page.status_code == 200
    assert "new: 0/30 failed, rate ≤ 11.4% at 95%: not a budget claim" in page.content.decode()


def test_a_guard_row_without_a_commit_is_refused(board, roomy):
    """A node is new at a commit: without one, a node first measured at no commit would be
    "new" at every later report without one, a known flaky node passing as new_test_clean."""
    write = new_token(roomy)
    flaky = board.report(roomy.slug, write, body([measurement(A, n=200, fails=10)]),
                         query={"branch": "main"})
    assert (flaky.json["status"], flaky.json["reason"]) == ("FAIL", "over_budget")
    stored = Report.objects.count()
    again = board.report(roomy.slug, write, body([measurement(B), guard_row(A, 3, 0)]),
                         query={"branch": "main"})
    assert (again.status, again.error) == (422, "validation_failed")
    detail = again.json["details"][0]
    assert (detail["row"], detail["field"], detail["code"]) == (1, "new_test", "invalid_value")
    assert "commit" in detail["message"]
    assert "row 1" in again.json["message"]
    assert Report.objects.count() == stored
    # The envelope's commit, or the query's, is what the row needs.
    envelope = {"measurements": [guard_row(C, 3, 0)], "commit": "pr-1"}
    rows = board.report(roomy.slug, write, body(envelope)).json["measurements"]
    assert [row["reason"] for row in rows] == ["new_test_clean"]


def test_a_node_with_evidence_at_no_commit_is_never_new(roomy):
    report_ingest(suite=roomy, body=body([measurement(A, n=200, fails=10)]), actor="ci")
    assert Node.objects.get(nodeid=A).first_commit == ""
    _, births = tiers_and_births(roomy, [A])
    assert rules.is_new(births[0], "") is False
    outcome = report_ingest(suite=roomy, body=body([guard_row(A, 30, 0)]), actor="ci",
                            query={"commit": "pr-1"})
    assert judged(outcome)[A] == ("FAIL", "too_few_runs")  # not new: no budget claim
