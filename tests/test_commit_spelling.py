"""One commit, however it is spelled, is one commit: a commit is read in one canonical form
wherever it comes in (verdicts, reports, JUnit, the tiers and order queries, the lists'
filters), trimmed, and in lower case when it is hex, as git's hex is case-insensitive. So a
gate at ``abc123`` cannot be restarted as ``ABC123`` or ``abc123 ``."""

from __future__ import annotations

from junit.ingest import junit_ingest
from junit.models import JUnitFile
from runs.ingest import report_ingest, signals_ingest
from runs.models import Report, VerdictBatch
from tests.api_http import API, new_token
from tests.helpers import body, measurement, record
from tests.junit_files import XML, junit_xml

A = "tests/p.py::test_a"


def test_a_commit_in_another_spelling_is_the_same_gate(board, suite, token):
    def attempt(commit, check):
        return board.verdicts(suite.slug, token, body(
            {"patch": "p", "commit": commit, "records": [record(A, check)]})).json

    attempt("abc123", "fail")
    second = attempt("abc123", "pass")
    assert (second["verdict"], second["attempt"]) == ("reject", 2)
    upper = attempt("ABC123", "pass")
    assert (upper["verdict"], upper["exit_code"], upper["attempt"]) == ("reject", 1, 3)
    spaced = attempt("abc123 ", "pass")
    assert (spaced["verdict"], spaced["attempt"]) == ("reject", 4)
    # A bare list's commit comes from the query, read the same way.
    bare = board.verdicts(suite.slug, token, body([record(A)]),
                          query={"patch": "p", "commit": " ABC123"}).json
    assert (bare["verdict"], bare["attempt"]) == ("reject", 5)
    assert set(VerdictBatch.objects.values_list("commit", flat=True)) == {"abc123"}


def test_reports_in_two_spellings_pool(suite):
    report_ingest(suite=suite, actor="ci", body=body(
        {"commit": "ABC123", "measurements": [measurement(A, fails=9, seed_base=0)]}))
    outcome = report_ingest(suite=suite, actor="ci", query={"commit": "abc123 "},
                            body=body([measurement(A, fails=0, seed_base=200)]))
    assert (outcome.upload.status, outcome.upload.attempt) == ("FAIL", 2)
    assert outcome.rows[0]["pooled"]["n"] == 400
    assert set(Report.objects.values_list("commit", flat=True)) == {"abc123"}


def test_a_junit_files_commit_is_read_the_same_way(board, suite, token):
    answer = board.post(f"{API}/suites/{suite.slug}/junit", junit_xml(("tests.p", "test_a",
                                                                        "passed")),
                        token=token, content_type=XML, query={"commit": "ABC123 "})
    assert (answer.status, answer.json["commit"]) == (201, "abc123")
    assert JUnitFile.objects.get().commit == "abc123"


def test_the_queries_read_a_commit_the_same_way(board, suite):
    signals_ingest(suite=suite, actor="ci", body=body(
        {"patch": "p", "commit": "abc123", "records": [record(A)]}))
    junit_ingest(suite=suite, actor="ci", body=junit_xml(("tests.p", "test_a", "passed")),
                 query={"commit": "abc123", "job": "py312"})
    read = new_token(suite, "read")
    tiers = board.post(f"{API}/suites/{suite.slug}/tiers", body([A]), token=read,
                       query={"commit": "ABC123"})
    # Seen first at this very commit: still new there, as at abc123.
    assert tiers.json["tiers"][0]["new"] is True
    order = board.post(f"{API}/suites/{suite.slug}/junit/order", body([A]), token=read,
                       query={"commit": "ABC123 "})
    assert order.json["commit"] == "abc123"
    assert [f["order"] for f in order.json["files"]] == [[A]]
    listed = board.get(f"{API}/suites/{suite.slug}/verdicts", token=read,
                       query={"commit": "ABC123"})
    assert listed.json["total"] == 1
