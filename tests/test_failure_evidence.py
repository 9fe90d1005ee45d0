"""Every failure of a patch's gate explained (SPEC 2.4c): the board gathers each failed
node's evidence (its live entry, its flaky evidence as the flaky-tests page holds it, its
JUnit results on the default branch) in one service, labels it, and a verdict batch's
failed rows carry the label and its line, as the failures endpoint answers them."""

from __future__ import annotations

from datetime import timedelta

import pytest

from board.failures import failure_evidence, failures_explained
from flakeboard import rules
from junit.ingest import junit_ingest
from runs.ingest import report_ingest, signals_ingest
from runs.results import batch_answer
from tests.api_http import API, new_token
from tests.helpers import body, measurement, quarantined, record
from tests.junit_files import junit_xml

NODE = "tests/test_a.py::test_a"
OTHER = "tests/test_a.py::test_b"


def case(nodeid: str, outcome: str) -> tuple:
    return ("tests.test_a", nodeid.rpartition("::")[2], outcome)


def junit(suite, *cases, commit: str, branch: str = "main", job: str = "py3.12") -> None:
    junit_ingest(suite=suite, body=junit_xml(*cases), actor="ci",
                 query={"commit": commit, "branch": branch, "job": job})


def live_entry(suite, today):
    quarantined(suite, today, {NODE: 10})


def junit_flaky(suite, today):
    # Failed, rerun and passed in one job of a feature branch: 1 flaky failure of 2 runs.
    junit(suite, case(NODE, "failed"), case(NODE, "passed"), commit="f1", branch="feature/x")


def flipped(suite, today):
    for check in ("fail", "pass"):
        signals_ingest(suite=suite, body=body([record(NODE, check)]), actor="ci",
                       query={"patch": "pr-7", "commit": "c7"})


def order_dependent(suite, today):
    junit_flaky(suite, today)
    report_ingest(suite=suite, actor="ci", body=body([{
        **measurement(NODE, n=20, fails=4), "classification": "order_dependent",
        "cause": {"role": "polluter", "nodes": [OTHER], "complete": True}}]))


def failing_on_default(suite, today):
    for commit in ("0ld", "n3w"):
        junit(suite, case(NODE, "failed"), commit=commit)


def passed_on_default(suite, today):
    junit(suite, case(NODE, "failed"), commit="0ld")
    junit(suite, case(NODE, "passed"), commit="n3w")
    junit(suite, case(NODE, "skipped"), commit="n3x")  # neither passes nor fails


def failing_elsewhere_only(suite, today):
    junit(suite, case(NODE, "failed"), commit="b1", branch="feature/x")


BOARDS = [
    (live_entry, "quarantined", "quarantined: until {expires} by @finley"),
    (junit_flaky, "known_flaky", "known flaky: rate 50.0% (≤ 90.5% at 95%) since {today}"),
    (flipped, "known_flaky", "known flaky: rate 50.0% (≤ 90.5% at 95%) since {today}"),
    (order_dependent, "known_flaky",
     "known flaky: rate 50.0% (≤ 90.5% at 95%) since {today}, order_dependent (fails only "
     f"after {OTHER})"),
    (failing_on_default, "failing_on_default",
     "also failing on the default branch: last failed at n3w, 0ld"),
    (passed_on_default, "new_failure",
     "new failure: it passes on the default branch and no flaky evidence, so probably caused "
     "by this change"),
    (failing_elsewhere_only, "new_failure",
     "new failure: no result of it on the default branch and no flaky evidence, so probably "
     "caused by this change"),
]


@pytest.mark.parametrize(("make", "label", "line"), BOARDS, ids=[b[0].__name__ for b in BOARDS])
def test_each_board_labels_the_failed_node(suite, today, make, label, line):
    make(suite, today)
    expires = (today + timedelta(days=10)).isoformat()
    explained = failures_explained(suite, [NODE], today)[NODE]
    assert (explained["label"], explained["line"]) == (
        label, line.format(today=today.isoformat(), expires=expires))


def test_the_evidence_is_the_boards_and_an_unknown_node_has_none(suite, today):
    failing_on_default(suite, today)
    junit_flaky(suite, today)
    found = failure_evidence(suite, [NODE, "tests/new.py::test_n"], today)
    # Its rate counts its runs on every branch, as the flaky-tests page does: 1 of 4.
    assert found[NODE] == rules.FailureEvidence(
        flaky=(0.25, rules.upper95(1, 4), today.isoformat(), ""),
        default_failures=("n3w", "0ld"), passed_on_default=False)
    assert found["tests/new.py::test_n"] == rules.FailureEvidence()
    assert failures_explained(suite, [NODE], today)[NODE]["evidence"] == {
        "entry": None, "default_failures": ["n3w", "0ld"], "passed_on_default": False,
        "flaky": {"rate": 0.25, "upper95": round(rules.upper95(1, 4), 4),
                  "since": today.isoformat(), "diagnosis": ""}}


def test_an_expired_entry_explains_nothing(suite, today):
    live_entry(suite, today)
    later = today + timedelta(days=11)
    assert failures_explained(suite, [NODE], later)[NODE]["label"] == "new_failure"


def test_a_batch_answer_explains_its_failed_rows_only(suite, today):
    failing_on_default(suite, today)
    outcome = signals_ingest(suite=suite, body=body([record(NODE, "fail"), record(OTHER)]),
                             actor="ci", query={"patch": "pr-1", "commit": "c1"})
    rows = {row["node"]: row for row in batch_answer(outcome)["records"]}
    assert rows[NODE]["failure"]["label"] == "failing_on_default"
    assert rows[NODE]["failure"]["line"] == (
        "also failing on the default branch: last failed at n3w, 0ld")
    assert rows[OTHER]["failure"] is None


def test_the_verdicts_answer_and_the_failures_endpoint_say_the_same(board, suite, token, today):
    passed_on_default(suite, today)
    sent = board.verdicts(suite.slug, token, body([record(NODE, "fail"), record(OTHER)]),
                          query={"patch": "pr-1", "commit": "c1"})
    assert sent.status == 201  # and its rows match the documented schema (tests/api_http)
    rows = {row["node"]: row["failure"] for row in sent.json["records"]}
    assert rows[OTHER] is None
    assert rows[NODE]["label"] == "new_failure"
    asked = board.post(f"{API}/suites/{suite.slug}/failures", body([NODE, OTHER]),
                       token=new_token(suite, "read"))
    assert asked.status == 200
    answered = {row.pop("node"): row for row in asked.json["nodes"]}
    assert answered[NODE] == rows[NODE]
    assert answered[OTHER]["label"] == "new_failure"  # asked: it failed, as far as the caller says
    refused = board.post(f"{API}/suites/{suite.slug}/failures", body({"nodes": [NODE]}),
                         token=token)
    assert refused.status == 422


def test_a_known_flaky_line_names_its_diagnosis(suite, today):
    # Its failures in JUnit files are connection resets: external, whatever measured it.
    reset = ("tests.test_a", "test_a", "failed", "ConnectionResetError: [Errno 104] reset")
    junit(suite, reset, case(NODE, "passed"), commit="f1", branch="feature/x")
    line = failures_explained(suite, [NODE], today)[NODE]["line"]
    assert line == f"known flaky: rate 50.0% (≤ 90.5% at 95%) since {today}, external"
