"""The targets file, GET /api/v1/suites/{suite}/targets (issue 17): the nodes marked to
measure, then the tests most often flaky that no measurement has found within budget since
they were last flaky; plain text, one node id a line, saved as flake_targets.txt. And the
acceptance run: real pytest (--reruns) and jest-junit files, uploaded as CI sends them, whose
flaky tests appear in the upload's answer, on the flaky-tests page and in the file."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from board.targets import measure_targets
from junit.ingest import junit_ingest
from ledger.measure_targets import measure_target_set
from runs.ingest import report_ingest
from runs.models import Measurement
from tests.api_http import API
from tests.helpers import body, measurement
from tests.junit_files import XML, corpus, junit_xml

A, B, C = ("tests/test_a.py::test_a", "tests/test_a.py::test_b", "tests/test_a.py::test_c")


def flake(suite, nodeid: str, *, commit: str, times: int = 1):
    """``times`` jobs of ``commit`` in which ``nodeid`` failed, was rerun and passed."""
    name = nodeid.rpartition("::")[2]
    for job in range(times):
        xml = junit_xml(("tests.test_a", name, "failed"), ("tests.test_a", name, "passed"))
        junit_ingest(suite=suite, body=xml, actor="ci",
                     query={"commit": commit, "job": f"job{job}", "branch": "main"})


def measure(suite, nodeid: str, *, fails: int, n: int = 400):
    report_ingest(suite=suite, body=body([measurement(nodeid, n=n, fails=fails)]), actor="ci")


def test_marked_nodes_come_first_then_the_most_flaky(suite, today):
    flake(suite, A, commit="c1", times=1)
    flake(suite, B, commit="c2", times=3)
    flake(suite, C, commit="c3", times=2)
    assert measure_targets(suite, today) == [B, C, A]
    measure_target_set(suite=suite, nodeid=A, actor="@finley", marked=True)
    assert measure_targets(suite, today) == [A, B, C]  # A once, marked
    assert measure_targets(suite, today, limit=1) == [A, B]  # the limit counts the flaky
    assert measure_targets(suite, today, limit=0) == [A]


def test_a_test_measured_within_budget_since_its_last_flake_is_left_out(suite, today):
    flake(suite, A, commit="c1")
    flake(suite, B, commit="c2")
    flake(suite, C, commit="c3")
    measure(suite, A, fails=0)  # within budget: done
    measure(suite, B, fails=40)  # over budget: still worth measuring
    assert measure_targets(suite, today) == [B, C]
    # Measured clean before its last flake: back on the list.
    Measurement.objects.filter(node__nodeid=A).update(
        created_at=timezone.now() - timedelta(days=2))
    assert measure_targets(suite, today) == [A, B, C]


def test_the_file_is_plain_text_one_id_a_line(suite, client, token):
    flake(suite, A, commit="c1", times=2)
    flake(suite, B, commit="c2")
    response = client.get(f"{API}/suites/{suite.slug}/targets",
                          headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content.decode() == f"{A}\n{B}\n"


def test_an_empty_file_when_nothing_is_flaky(suite, client, token):
    response = client.get(f"{API}/suites/{suite.slug}/targets",
                          headers={"Authorization": f"Bearer {token}"})
    assert (response.status_code, response.content) == (200, b"")


@pytest.mark.parametrize("limit", ["-1", "1001", "many", "1.0", "+1", ["5", "6"]])
def test_a_limit_out_of_range_is_refused(suite, client, token, limit):
    response = client.get(f"{API}/suites/{suite.slug}/targets", {"limit": limit},
                          headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 422
    assert response.json()["details"][0]["field"] == "limit"


def _passed_on_the_next_attempt(xml: bytes) -> bytes:
    """jest-junit's file of a second attempt of the job, in which the test that failed in
    the first passed: jest-junit writes a passing test as an empty testcase."""
    start = xml.index(b"<failure>")
    end = xml.index(b"</failure>", start) + len(b"</failure>")
    return xml[:start] + xml[end:]


def test_real_pytest_and_jest_files_show_their_flaky_tests_everywhere(
        board, suite, token, owner, client_for):
    """Acceptance (issue 17): pytest --reruns flakes within one file; jest-junit writes only
    a retried test's last result, so a jest flake shows over two attempts of the job."""
    post = lambda xml, **query: board.post(  # noqa: E731
        f"{API}/suites/{suite.slug}/junit", xml, token=token, content_type=XML,
        query={"commit": "9f3c2a1", "branch": "main", **query})
    pytest_answer = post(corpus("pytest-rerunfailures-xunit2.xml"), job="py3.12")
    jest_xml = corpus("jest-junit.xml")
    first = post(jest_xml, job="web", attempt=1)
    second = post(_passed_on_the_next_attempt(jest_xml), job="web", attempt=2)
    pytest_flaky = ["tests/test_payments.py::test_settles_within_deadline",
                    "tests/test_payments.py::TestCurrency::test_format[JPY]"]
    jest_flaky = "sum adds floats exactly"
    assert [a.status for a in (pytest_answer, first, second)] == [201, 201, 201]
    assert pytest_answer.json["newly_flaky"] == pytest_flaky
    assert first.json["newly_flaky"] == []
    (jest_node,) = second.json["newly_flaky"]
    assert jest_node.endswith(jest_flaky)

    page = client_for(owner).get(reverse("flaky", args=[suite.slug]))
    listed = [row.node.nodeid for row in page.context["rows"]]
    assert sorted(listed) == sorted([*pytest_flaky, jest_node])

    targets = board.get(f"{API}/suites/{suite.slug}/targets", token=token)
    assert targets.status == 200
    assert sorted(targets.raw.decode().splitlines()) == sorted([*pytest_flaky, jest_node])


def test_tests_with_no_diagnosis_come_first(suite, today):
    flake(suite, B, commit="c2", times=3)
    flake(suite, C, commit="c3", times=2)
    flake(suite, A, commit="c1", times=1)
    assert measure_targets(suite, today) == [B, C, A]
    # B's latest measurement is flaky and seeded by its experiments: it has a diagnosis.
    seeded = {"seeds": [9138], "controls": [9137], "seed_runs": 2, "seed_fails": 2,
              "control_runs": 2, "control_fails": 0, "command": f"replay {B} --seed 9138"}
    report_ingest(suite=suite, actor="ci", body=body([{
        **measurement(B, n=100, fails=30, classification="flaky"),
        "experiments": {"seeded": seeded}}]))
    assert measure_targets(suite, today) == [C, A, B]
    measure_target_set(suite=suite, nodeid=B, actor="@finley", marked=True)
    assert measure_targets(suite, today) == [B, C, A]  # marked first, diagnosed or not
