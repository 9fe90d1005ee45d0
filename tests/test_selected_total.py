"""A report's ``selected_total`` is the client's word for how many tests its job selected:
stored and shown beside the board's own figure, never the quarantined share's denominator
(SPEC 2.2, docs/test-set.md). The share counts the tests of CI's latest complete run on the
default branch, else the known nodes, and every answer, page and the status endpoint say
the same figure for the same day."""

from __future__ import annotations

from datetime import timedelta

import pytest

from junit.ingest import junit_ingest
from ledger.quarantine import quarantine_create
from runs.ingest import report_ingest
from runs.results import summary_lines
from tests.api_http import API
from tests.helpers import body, measurement
from tests.junit_files import junit_xml

CI_TESTS = 101
QUARANTINED = "tests/test_pay.py::test_0"
MEASURED = "tests/test_pay.py::test_1"


@pytest.fixture
def sized(suite, today):
    """A suite whose CI run on main sizes the test set at 101, one of them quarantined:
    1 of 101 is under the 5% cap."""
    cases = [("tests.test_pay", f"test_{i}", "passed") for i in range(CI_TESTS)]
    junit_ingest(suite=suite, body=junit_xml(*cases), actor="ci",
                 query={"commit": "main-1", "job": "tests", "branch": "main"})
    quarantine_create(suite=suite, nodeid=QUARANTINED, owner="@finley", evidence="ci/run-1",
                      actor="@finley", expires=today + timedelta(days=14), today=today)
    return suite


def judged(answer: dict) -> tuple:
    """What a report's answer decided, and the figure it decided it by."""
    share = answer["share"]
    return (answer["status"], answer["reason"], answer["exit_code"],
            [(m["status"], m["reason"]) for m in answer["measurements"]],
            share["quarantined"], share["test_set_size"], share["share"], share["over_cap"],
            share["size_source"])


@pytest.mark.parametrize("stated", [1_000_000, 1, 2, 101])
def test_a_stated_selection_moves_nothing(board, sized, token, stated):
    rows = [measurement(MEASURED)]
    plain = board.report(sized.slug, token, body({"measurements": rows, "commit": "pr-1"}))
    padded = board.report(sized.slug, token, body(
        {"measurements": rows, "commit": "pr-2", "selected_total": stated}))
    assert (plain.status, padded.status) == (201, 201)
    assert judged(padded.json) == judged(plain.json) == (
        "OK", "within_budget", 0, [("OK", "within_budget")],
        1, CI_TESTS, round(1 / CI_TESTS, 6), False, "ci_run")
    assert padded.headers["Flakeboard-Exit-Code"] == "0"
    # Stored and said beside the figure, as the client stated it.
    assert padded.json["share"]["selected_total"] == stated
    assert plain.json["share"]["selected_total"] is None


def test_a_pull_request_that_selects_one_test_is_not_over_the_cap(sized):
    """What ``gate --measure --upload`` sends for a PR that selects one test."""
    outcome = report_ingest(suite=sized, body=body(
        {"measurements": [measurement(MEASURED)], "commit": "pr-1", "selected_total": 1}),
        actor="ci")
    report = outcome.upload
    assert (report.status, report.reason, report.over_cap) == ("OK", "within_budget", False)
    assert (report.selected_total, report.test_set_size, report.size_source) == (
        1, CI_TESTS, "ci_run")
    assert summary_lines(outcome)[-1] == (
        "report OK within_budget: exit 0; quarantined share 1.0% of 101 (cap 5.0%); "
        "the report selected 1")


def test_the_known_nodes_decide_where_no_ci_run_sizes_it(suite, today):
    rows = [measurement(f"tests/test_pay.py::test_{i}") for i in range(40)]
    report_ingest(suite=suite, body=body(rows), actor="ci")
    quarantine_create(suite=suite, nodeid="tests/test_pay.py::test_0", owner="@finley",
                      evidence="ci/run-1", actor="@finley", expires=today + timedelta(days=14),
                      today=today)
    report = report_ingest(suite=suite, body=body(
        {"measurements": rows[1:2], "commit": "pr-1", "selected_total": 10}), actor="ci").upload
    assert (report.status, report.test_set_size, report.size_source, report.over_cap) == (
        "OK", 40, "known_nodes", False)


def test_every_answer_and_page_says_the_same_figure(board, sized, token, client_for, lead):
    answer = board.report(sized.slug, token, body(
        {"measurements": [measurement(MEASURED)], "commit": "pr-1", "selected_total": 1})).json
    status = board.get(f"{API}/suites/{sized.slug}/status", token=token).json
    figures = ("quarantined", "test_set_size", "share", "over_cap", "size_source")
    assert [status["share"][k] for k in figures] == [answer["share"][k] for k in figures]
    page = client_for(lead).get(answer["url"]).content.decode()
    assert "1 of 101 tests CI ran" in page
    assert "1 selected by the report" in page
    overview = client_for(lead).get(f"/suites/{sized.slug}/").content.decode()
    assert "1 of 101 tests CI ran" in overview
