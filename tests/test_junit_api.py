"""POST /api/v1/suites/{suite}/junit, as CI calls it: the answer the OpenAPI document
describes (every call here is checked against it, tests/api_http.py), stored once, and a
large file ingested well within its budget."""

from __future__ import annotations

import time

import pytest

from junit.ingest import junit_ingest
from junit.models import CaseResult, JUnitFile
from tests.api_http import API
from tests.junit_files import XML, corpus, gzipped, junit_xml


@pytest.fixture
def send(board, suite, token):
    def post(body: bytes, headers=None, **query):
        return board.post(f"{API}/suites/{suite.slug}/junit", body, token=token,
                          content_type=XML, headers=headers,
                          query={"commit": "9f3c2a1", **query})

    return post


def test_a_file_is_stored_and_answered(send):
    answer = send(corpus("pytest-rerunfailures-xunit2.xml"), branch="main", job="py3.12",
                  attempt=2)
    assert answer.status == 201
    file = JUnitFile.objects.get()
    assert answer.json == {
        "id": file.pk, "url": None, "duplicate": False,
        "commit": "9f3c2a1", "branch": "main", "job": "py3.12", "attempt": 2,
        "producer": "pytest",
        "counts": {"testcases": 10, "passed": 7, "failed": 1, "error": 1, "skipped": 1,
                   "reruns": 7, "flaky_in_file": 2},
        "infrastructure": False, "infrastructure_reason": None,
        "failing_share": 0.2222, "infrastructure_share": 0.8,
        "newly_flaky": ["tests/test_payments.py::test_settles_within_deadline",
                        "tests/test_payments.py::TestCurrency::test_format[JPY]"],
        "newly_flaky_count": 2, "differs_by_job": [], "sizes_test_set": True, "flags": [],
        "summary": "10 tests: 7 passed, 1 failed, 1 error, 1 skipped; 7 reruns. 2 tests newly "
                   "flaky on commit 9f3c2a1 (job py3.12). Its tests count in the test set: "
                   "CI's run of 9f3c2a1 on main.",
    }
    assert "Location" not in answer.headers and "Flakeboard-Exit-Code" not in answer.headers


def test_the_same_file_and_query_is_stored_once(send):
    xml = corpus("jest-junit.xml")
    first = send(xml, job="web")
    again = send(gzipped(xml), headers={"Content-Encoding": "gzip"}, job="web")
    assert (first.status, again.status) == (201, 200)
    assert again.json == {**first.json, "duplicate": True}
    assert JUnitFile.objects.count() == 1 and CaseResult.objects.count() == 4
    # Another attempt of the job is another upload.
    assert send(xml, job="web", attempt=2).status == 201
    assert JUnitFile.objects.count() == 2


def test_an_infrastructure_failure_is_said_in_the_answer(send):
    answer = send(corpus("gotestsum-junitxml-report.xml")).json
    assert (answer["infrastructure"], answer["infrastructure_reason"]) == (
        True, "error_outside_tests")
    assert answer["newly_flaky"] == [] and "left out of flaky-test detection" in answer["summary"]


def test_malformed_xml_is_refused_with_its_place(send):
    answer = send(b"<testsuites>\n<testsuite>\n</testsuites>")
    assert (answer.status, answer.error) == (400, "invalid_xml")
    assert answer.json["message"] == ("The body is not well-formed XML: mismatched tag at "
                                      "line 3, column 3")
    assert answer.json["details"] == [{"row": None, "field": None, "code": "invalid_xml",
                                       "message": answer.json["message"]}]


def test_the_document_describes_the_xml_body(board):
    document = board.get("/api/v1/openapi.json").json
    operation = document["paths"]["/api/v1/suites/{suite}/junit"]["post"]
    assert set(operation["requestBody"]["content"]) == {"application/xml", "text/xml"}
    parameters = {p["name"]: p for p in operation["parameters"]}
    assert parameters["commit"]["required"] is True
    assert parameters["attempt"]["schema"]["minimum"] == 1
    answer = document["components"]["schemas"]["JUnitAnswer"]
    assert answer["additionalProperties"] is False
    assert {"newly_flaky", "newly_flaky_count", "infrastructure", "counts"} <= set(
        answer["properties"])


def large_file(tests: int) -> bytes:
    """A pytest file of ``tests`` tests in 100 modules and 20 classes; one in fifty
    failing, one in a hundred rerun and passing."""
    cases = []
    for i in range(tests):
        classname = f"tests.pkg{i % 10}.test_mod{i % 100}.TestGroup{i % 20}"
        name = f"test_case_{i}[param-{i % 7}]"
        if i % 100 == 0:
            cases.append((classname, name, "rerun"))
        cases.append((classname, name, "failed" if i % 50 == 1 else "passed",
                      f"AssertionError: expected {i} got {i + 1} at 0x7f{i:06x}"))
    return junit_xml(*cases)


@pytest.mark.slow
def test_a_ten_thousand_testcase_file_ingests_well_within_its_budget(suite, capsys):
    """Issue 17's goal is a second for 10,000 testcases (B7, in ``make bench``); on a quiet
    machine this takes about half that. Timed in this process's CPU time (SQLite works in
    it), and held to twice the goal: a regression fails here, a busy machine does not."""
    xml = large_file(10_000)
    timings = []
    for attempt in (1, 2):  # every node new, then every node known
        start, cpu = time.perf_counter(), time.process_time()
        file = junit_ingest(suite=suite, body=xml, actor="ci",
                            query={"commit": "c1", "job": "bench", "attempt": attempt}).file
        timings.append((time.perf_counter() - start, time.process_time() - cpu))
        assert (file.testcases, file.reruns) == (10_000, 100)
    with capsys.disabled():
        print("\n10,000 testcases: " + ", ".join(
            f"{what} {wall:.3f} s ({cpu:.3f} s CPU)"
            for what, (wall, cpu) in zip(("new", "known"), timings, strict=True)))
    assert max(cpu for _, cpu in timings) < 2.0
