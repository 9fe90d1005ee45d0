"""SPEC 2.4d in the answers: each measurement row of a report's answer carries its
diagnosis (a row classified flaky, order_dependent or repeat_unsafe, or with a failed run;
null for the others), fresh, in a dry run, as a duplicate and read back; the diagnoses
endpoint answers the same object for any node ids."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from board.diagnosis import node_diagnosis
from junit.ingest import junit_ingest
from runs.api.schemas import ReportAnswer
from runs.ingest import report_ingest
from tests.api_http import openapi_document
from tests.helpers import body, measurement
from tests.junit_files import junit_xml

NODE = "tests/test_x.py::test_y"
STABLE = "tests/test_x.py::test_stable"
SUSPECT = "tests/test_x.py::test_suspect"
LOAD = {"idle_n": 100, "idle_fails": 2, "load_n": 100, "load_fails": 31,
        "command": f"python3 flakeboard_ci.py replay '{NODE}' --stress --runs 100"}
ROWS = [
    {**measurement(NODE, n=100, fails=2, classification="flaky"),
     "experiments": {"load": LOAD}},
    measurement(STABLE, n=200, fails=0, classification="stable"),
    measurement(SUSPECT, n=200, fails=1),
]
TIMING = {"category": "timing",
          "evidence": ["2/100 failed idle, 31/100 under CPU load (Fisher's exact p=0.0000)."],
          "command": LOAD["command"], "tried": ["CPU load"]}
UNKNOWN = {"category": "unknown", "evidence": [], "command": None, "tried": []}


@pytest.fixture
def api(token):
    return Client(headers={"Authorization": f"Bearer {token}"})


def diagnoses(answer: dict) -> dict:
    return {row["nodeid"]: row["diagnosis"] for row in answer["measurements"]}


def test_fresh_dry_duplicate_and_read_back(suite, api):
    def post(**query):
        response = api.post(f"/api/v1/suites/{suite.slug}/reports", body(ROWS),
                            content_type="application/json", query_params=query)
        sent = json.loads(response.content)
        assert ReportAnswer.model_validate(sent).model_dump(mode="json") == sent
        return response.status_code, diagnoses(sent)

    expected = {NODE: TIMING, STABLE: None, SUSPECT: UNKNOWN}
    assert post(dry_run="true") == (200, expected)  # nothing stored: the row's own facts
    assert post() == (201, expected)
    assert post() == (200, expected)
    [report] = json.loads(api.get(f"/api/v1/suites/{suite.slug}/reports").content)["items"]
    read = api.get(f"/api/v1/suites/{suite.slug}/reports/{report['id']}")
    assert diagnoses(json.loads(read.content)) == expected


def test_a_row_is_diagnosed_from_itself_with_the_boards_junit_facts(suite, today):
    # CI failed the node in one job of a commit that also passed it: the row says nothing
    # more of it, and the board adds what its JUnit files show.
    junit_ingest(suite=suite, actor="ci", query={"commit": "c1", "job": "py3.12"},
                 body=junit_xml(("tests.test_x", "test_suspect", "failed",
                                 "ConnectionResetError: [Errno 104] Connection reset by peer"),
                                ("tests.test_x", "test_suspect", "passed")))
    answer = report_ingest(suite=suite, actor="ci", body=body(ROWS)).rows
    suspect = diagnoses({"measurements": answer})[SUSPECT]
    assert suspect["category"] == "external"
    assert suspect["tried"] == ["CI jobs", "failure signatures"]
    assert suspect == node_diagnosis(suite, SUSPECT, today=today).answer()


def test_the_diagnoses_endpoint_answers_the_same_object(suite, api):
    report_ingest(suite=suite, actor="ci", body=body(ROWS))
    response = api.post(f"/api/v1/suites/{suite.slug}/diagnoses",
                        json.dumps([NODE, STABLE, "tests/nowhere.py::test_n"]),
                        content_type="application/json")
    assert response.status_code == 200
    assert json.loads(response.content) == {"suite": suite.slug, "nodes": [
        {"node": NODE, "diagnosis": TIMING},
        {"node": STABLE, "diagnosis": UNKNOWN},
        {"node": "tests/nowhere.py::test_n", "diagnosis": None}]}


def test_the_diagnoses_endpoint_refuses_a_bad_node_id_by_its_row(suite, api):
    response = api.post(f"/api/v1/suites/{suite.slug}/diagnoses", json.dumps([NODE, 7]),
                        content_type="application/json")
    assert response.status_code == 422
    [detail] = json.loads(response.content)["details"]
    assert (detail["row"], detail["field"]) == (1, "node")


def test_the_api_document_describes_the_field():
    schemas = openapi_document()["components"]["schemas"]
    assert "diagnosis" in schemas["MeasurementOut"]["required"]
    assert set(schemas["DiagnosisOut"]["properties"]) == {"category", "evidence", "command",
                                                          "tried"}
    assert "docs/diagnosis.md" in json.dumps(schemas["MeasurementOut"])
