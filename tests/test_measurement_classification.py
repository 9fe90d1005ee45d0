"""A measurement's optional classification (issue 16): what the client's measure command
found a test to be. The report upload takes it per measurement, closed to the rules'
vocabulary; the board stores it, answers it (null when not said: fresh, dry run and
duplicate alike), documents it, and shows it on the report row and the node page, with a
label and what it means. It is never used for a decision, and flake-report.json's own
shape is unchanged: a row without it is what the budget script writes."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from flakeboard import rules
from runs.api.schemas import ReportAnswer
from runs.ingest import report_ingest
from runs.models import CLASSIFICATION_TEXT, Measurement, Report
from runs.wire import UploadInvalid, parse_report
from tests.api_http import openapi_document, schema_validator
from tests.helpers import body, measurement, node_page

KINDS = list(rules.Classification)
NODE = "tests/test_pager.py::test_echo_via_pager[test0- cat ]"


def classified(kind: rules.Classification | str | None, nodeid: str = NODE, **figures) -> dict:
    row = measurement(nodeid, **figures)
    return row if kind is None else {**row, "classification": str(kind)}


def one_of_each() -> list[dict]:
    """A row of each classification (failing ones fail: 3 of 3 runs), and one without."""
    rows = [classified(kind, f"tests/test_kinds.py::test_{kind}",
                       **({"n": 3, "fails": 3} if kind in ("broken", "order_dependent") else {}))
            for kind in KINDS]
    return [*rows, measurement("tests/test_kinds.py::test_unsaid")]


# --- the vocabulary and the wire -------------------------------------------------------------


def test_the_vocabulary_is_the_issues_and_each_has_a_label_and_a_meaning():
    assert {kind.value for kind in KINDS} == {
        "stable", "flaky", "broken", "order_dependent", "repeat_unsafe"}
    assert set(CLASSIFICATION_TEXT) == set(KINDS)
    for label, meaning in CLASSIFICATION_TEXT.values():
        assert label and meaning.endswith(".")


@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_the_upload_takes_each_classification(kind):
    parsed = parse_report(body([classified(kind)]), {})
    assert parsed.measurements[0].classification is kind


@pytest.mark.parametrize("row", [measurement(NODE), {**measurement(NODE), "classification": None}],
                         ids=["absent", "null"])
def test_a_row_without_one_is_the_scripts_row(row):
    assert parse_report(body([row]), {}).measurements[0].classification is None


@pytest.mark.parametrize("value", ["maybe", "Flaky", "order-dependent", "", 3, True, ["flaky"]])
def test_any_other_value_is_refused_naming_the_row_and_the_field(value):
    rows = [measurement("tests/a.py::test_ok"), {**measurement(NODE), "classification": value}]
    with pytest.raises(UploadInvalid) as refused:
        parse_report(body(rows), {})
    [problem] = refused.value.problems
    assert (problem.row, problem.field, problem.code) == (1, "classification", "invalid_value")
    assert "'stable'" in problem.message and "'repeat_unsafe'" in problem.message


def test_the_api_document_lists_the_vocabulary_in_and_out():
    schemas = openapi_document()["components"]["schemas"]
    assert set(schemas["Classification"]["enum"]) == {kind.value for kind in KINDS}
    explained = " ".join(schemas["Classification"]["description"].split())
    assert all(f"{kind.value} (" in explained for kind in KINDS)
    upload = openapi_document()["paths"]["/api/v1/suites/{suite}/reports"]["post"]
    request = schema_validator(upload["requestBody"]["content"]["application/json"]["schema"])
    assert request.is_valid(one_of_each())
    assert not request.is_valid([classified("maybe")])
    answer = schemas["MeasurementOut"]
    assert "classification" in answer["required"]
    assert "null" in json.dumps(answer["properties"]["classification"])


# --- stored and answered ---------------------------------------------------------------------


@pytest.fixture
def send(suite, token):
    client = Client(headers={"Authorization": f"Bearer {token}"})

    def post(payload, **query):
        return client.post(f"/api/v1/suites/{suite.slug}/reports", body(payload),
                           content_type="application/json", query_params=query)

    return post


def answered(response) -> dict:
    """Each row's classification, by node, from an answer in its schema's shape."""
    sent = json.loads(response.content)
    assert ReportAnswer.model_validate(sent).model_dump(mode="json") == sent
    return {row["nodeid"]: row["classification"] for row in sent["measurements"]}


EXPECTED = {**{f"tests/test_kinds.py::test_{kind}": kind.value for kind in KINDS},
            "tests/test_kinds.py::test_unsaid": None}


def test_the_answer_carries_it_fresh_dry_and_duplicate(send):
    dry = send(one_of_each(), dry_run="true")
    fresh = send(one_of_each())
    again = send(one_of_each())
    assert (dry.status_code, fresh.status_code, again.status_code) == (200, 201, 200)
    assert again.json()["duplicate"] is True
    assert answered(dry) == answered(fresh) == answered(again) == EXPECTED
    stored = dict(Measurement.objects.values_list("node__nodeid", "classification"))
    assert stored.pop("tests/test_kinds.py::test_unsaid") == ""
    assert sorted(stored.values()) == sorted(kind.value for kind in KINDS)


def test_it_is_never_used_for_a_decision(suite):
    """The same figures judge alike whatever the classification says."""
    rows = [measurement(f"t.py::t{i}", n=n, fails=fails)
            for i, (n, fails) in enumerate([(200, 0), (200, 5), (20, 0), (3, 3)])]
    plain = report_ingest(suite=suite, body=body(rows), actor="ci", dry_run=True)
    for kind in KINDS:
        said = [{**row, "classification": kind.value} for row in rows]
        outcome = report_ingest(suite=suite, body=body(said), actor="ci", dry_run=True)
        assert [(r["status"], r["reason"]) for r in outcome.rows] == [
            (r["status"], r["reason"]) for r in plain.rows]


def test_the_ingest_command_stores_it_and_refuses_a_bad_one(suite, tmp_path):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_bytes(body(one_of_each()))
    bad.write_bytes(body([measurement("t.py::ok"), classified("sometimes")]))
    with pytest.raises(CommandError, match=r"row 1, field 'classification'"):
        call_command("ingest_report", suite.slug, str(bad), stdout=StringIO())
    assert not Report.objects.exists()
    printed = StringIO()
    with pytest.raises(SystemExit):  # the order-dependent and broken rows fail the gate
        call_command("ingest_report", suite.slug, str(good), stdout=printed)
    kinds = set(Measurement.objects.values_list("classification", flat=True))
    assert kinds == {"", *(kind.value for kind in KINDS)}
    lines = printed.getvalue().splitlines()
    assert ("FAIL tests/test_kinds.py::test_order_dependent: over_budget "
            "(upper95=1.0000 over 3 runs; classified order_dependent)") in lines
    assert ("OK   tests/test_kinds.py::test_unsaid: within_budget "
            "(upper95=0.0188 over 200 runs)") in lines


# --- shown -----------------------------------------------------------------------------------


def badge(kind: rules.Classification) -> str:
    label, meaning = CLASSIFICATION_TEXT[kind]
    return (f'<span class="badge cls cls-{kind.value}" title="{meaning}">{label}'
            f'<span class="visually-hidden">: {meaning}</span></span>')


def html_of(client, url, **params) -> str:
    response = client.get(url, params, headers={"HX-Request": "true"} if params else {})
    assert response.status_code == 200
    return response.content.decode()


def test_the_report_page_shows_it_on_each_row(client_for, viewer, suite):
    report = report_ingest(suite=suite, body=body(one_of_each()), actor="ci").upload
    html = html_of(client_for(viewer), reverse("report", args=[suite.slug, report.pk]))
    rows = re.findall(r'<tr id="m\d+".*?</tr>', html, re.S)
    for kind in KINDS:
        [row] = [r for r in rows if f"test_{kind.value}</code>" in r]
        assert badge(kind) in row
    [unsaid] = [r for r in rows if "test_unsaid</code>" in r]
    assert 'class="badge cls' not in unsaid


def test_the_node_page_shows_it_in_the_measurement_history(client_for, viewer, suite):
    client = client_for(viewer)
    for day, kind in enumerate([None, rules.Classification.FLAKY,
                                rules.Classification.REPEAT_UNSAFE]):
        report_ingest(suite=suite, body=body([classified(kind, fails=day)]), actor="ci")
    html = html_of(client, node_page(suite.slug, NODE))
    history = html[html.index('id="measurements-heading"'):html.index('id="quarantine-heading"')]
    newest_first = re.findall(r'<tr class="status-\w+">.*?</tr>', history, re.S)
    assert len(newest_first) == 3
    assert badge(rules.Classification.REPEAT_UNSAFE) in newest_first[0]
    assert badge(rules.Classification.FLAKY) in newest_first[1]
    assert 'class="badge cls' not in newest_first[2]
    panel = html_of(client, node_page(suite.slug, NODE), panel="latest")
    assert badge(rules.Classification.REPEAT_UNSAFE) in panel
