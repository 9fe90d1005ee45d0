"""An order_dependent measurement's cause (issue 31): the tests the client's measure command
found it depends on, a polluter it fails only after or a state-setter it passes only after.
The report upload takes it per row, with that classification only; the board stores it,
answers it, documents it, and shows it on the report row and the node page, each other test
a link to its own page."""

from __future__ import annotations

import json
import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from flakeboard import rules
from ledger.models import Node, text_key
from ledger.selectors import known_nodes
from runs.api.schemas import ReportAnswer
from runs.ingest import report_ingest
from runs.models import CAUSE_ROLE_TEXT, Measurement
from runs.wire import UploadInvalid, parse_report
from tests.api_http import openapi_document, schema_validator
from tests.helpers import assert_row_refused, body, measurement, node_page

NODE = "tests/test_pager.py::test_echo_via_pager[test0- cat ]"
SETTER = "tests/test_termui.py::test_progressbar_strip_regression"
POLLUTERS = ["tests/test_a.py::test_half_one", "tests/test_a.py::test_half_two"]


def dependent(cause: dict | None, nodeid: str = NODE, **extra) -> dict:
    row = {**measurement(nodeid, n=3, fails=3), "classification": "order_dependent", **extra}
    return row if cause is None else {**row, "cause": cause}


SETS_UP = {"role": "state_setter", "nodes": [SETTER]}
TOGETHER = {"role": "polluter", "nodes": POLLUTERS, "complete": True}


# --- the wire --------------------------------------------------------------------------------


def test_the_upload_takes_a_cause_and_completes_it():
    parsed = parse_report(body([dependent(SETS_UP), dependent(None, "t.py::test_other")]), {})
    cause = parsed.measurements[0].cause
    assert (cause.role, cause.nodes, cause.complete) == ("state_setter", [SETTER], True)
    assert parsed.measurements[1].cause is None


# name: the row, the refusal's code and what its message says.
REFUSED = {
    "without order_dependent": (
        {**measurement(NODE), "classification": "stable", "cause": SETS_UP},
        "invalid_value", "goes with the classification order_dependent only"),
    "without any classification": (
        {**measurement(NODE), "cause": SETS_UP},
        "invalid_value", "goes with the classification order_dependent only"),
    "naming the test itself": (
        dependent({"role": "polluter", "nodes": [SETTER, NODE]}),
        "invalid_value", "names the measured test itself"),
    "naming a test twice": (
        dependent({"role": "state_setter", "nodes": [SETTER, "t.py::test_b", SETTER]}),
        "invalid_value", f"nodes names {SETTER} more than once"),
    "naming no test": (
        dependent({"role": "polluter", "nodes": []}),
        "out_of_range", "nodes must name 1 to 20 tests (got 0)"),
    "naming 21 tests": (
        dependent({"role": "polluter", "nodes": [f"t.py::test_{i}" for i in range(21)]}),
        "out_of_range", "nodes must name 1 to 20 tests (got 21)"),
    "an unknown role": (
        dependent({"role": "spoiler", "nodes": [SETTER]}),
        "invalid_value", "'polluter' or 'state_setter'"),
    "a node that is no node id": (
        dependent({"role": "polluter", "nodes": [""]}), "invalid_nodeid", ""),
    "complete that is not a boolean": (
        dependent({"role": "polluter", "nodes": [SETTER], "complete": "yes"}),
        "wrong_type", "must be true or false (got a string)"),
}


@pytest.mark.parametrize(("row", "code", "says"), REFUSED.values(), ids=REFUSED.keys())
def test_a_bad_cause_is_refused_naming_the_row_and_the_field(suite, row, code, says):
    rows = [measurement("tests/a.py::test_ok"), row]
    assert_row_refused(suite, rows, "cause", code, says)


def test_the_api_document_describes_it_in_and_out():
    schemas = openapi_document()["components"]["schemas"]
    assert set(schemas["CauseRole"]["enum"]) == {"polluter", "state_setter"}
    described = json.dumps(schemas["OrderCause"])
    assert "--bisect-max" in described and "only after" in described
    upload = openapi_document()["paths"]["/api/v1/suites/{suite}/reports"]["post"]
    request = schema_validator(upload["requestBody"]["content"]["application/json"]["schema"])
    assert request.is_valid([dependent(SETS_UP)])
    assert not request.is_valid([dependent({"role": "spoiler", "nodes": [SETTER]})])
    assert "cause" in schemas["MeasurementOut"]["required"]


# --- stored and answered ---------------------------------------------------------------------


def test_stored_and_answered_fresh_dry_and_duplicate(suite, token):
    client = Client(headers={"Authorization": f"Bearer {token}"})
    rows = [dependent(TOGETHER), dependent(None, "t.py::test_unnamed"),
            measurement("t.py::test_plain")]

    def post(**query):
        response = client.post(f"/api/v1/suites/{suite.slug}/reports", body(rows),
                               content_type="application/json", query_params=query)
        sent = json.loads(response.content)
        assert ReportAnswer.model_validate(sent).model_dump(mode="json") == sent
        return response.status_code, {row["nodeid"]: row["cause"] for row in sent["measurements"]}

    expected = {NODE: TOGETHER, "t.py::test_unnamed": None, "t.py::test_plain": None}
    assert post(dry_run="true") == (200, expected)
    assert post() == (201, expected)
    assert post() == (200, expected)  # the duplicate's answer, read back from the rows
    stored = dict(Measurement.objects.values_list("node__nodeid", "cause"))
    assert stored == expected


# --- shown -----------------------------------------------------------------------------------


def cause_span(html: str) -> str:
    [span] = re.findall(r'<span class="cause">.*?</span>', html, re.S)
    return span


def link(suite, nodeid: str) -> str:
    return reverse("node", args=[suite.slug, text_key(nodeid)])


def test_the_report_row_names_the_state_setter_with_a_link(client_for, viewer, suite):
    report = report_ingest(suite=suite, body=body([dependent(SETS_UP),
                                                   measurement("t.py::test_plain")]),
                           actor="ci").upload
    response = client_for(viewer).get(reverse("report", args=[suite.slug, report.pk]))
    html = response.content.decode()
    rows = re.findall(r'<tr id="m\d+".*?</tr>', html, re.S)
    [named] = [row for row in rows if "test_echo_via_pager" in row]
    span = cause_span(named)
    assert span.startswith('<span class="cause">passes only after <a href="'
                           f'{link(suite, SETTER)}"><code>')
    assert span.endswith("</code></a> (state-setter)</span>")
    assert "test_progressbar_strip_regression" in span
    [plain] = [row for row in rows if "test_plain" in row]
    assert 'class="cause"' not in plain


def test_the_node_page_names_polluters_needed_together(client_for, viewer, suite):
    report_ingest(suite=suite, body=body([dependent(TOGETHER)]), actor="ci")
    report_ingest(suite=suite, body=body([dependent(
        {"role": "polluter", "nodes": [*POLLUTERS, SETTER], "complete": False})]),
        actor="ci")
    html = client_for(viewer).get(node_page(suite.slug, NODE), follow=True).content.decode()
    history = html[html.index('id="measurements-heading"'):html.index('id="quarantine-heading"')]
    newest, oldest = re.findall(r'<tr class="status-\w+">.*?</tr>', history, re.S)
    together = cause_span(oldest)
    assert together.startswith('<span class="cause">fails only after <a ')
    assert together.endswith(" (polluters together)</span>")
    assert re.findall(r'href="([^"]+)"', together) == [link(suite, n) for n in POLLUTERS]
    assert "</a> and <a " in together
    among = cause_span(newest)
    assert among.startswith('<span class="cause">fails only after some of <a ')
    assert among.endswith(" (polluters among them)</span>")
    assert "</a>, <a " in among and "</a> and <a " in among


def test_each_role_has_the_pages_words():
    assert set(CAUSE_ROLE_TEXT) == set(rules.CauseRole)
    for role in rules.CauseRole:
        words = Measurement(cause={"role": role.value, "nodes": [SETTER]}).cause_words
        assert (words["role"], words["verb"]) == CAUSE_ROLE_TEXT[role]


def test_one_test_is_the_cause_wherever_the_bisection_stopped():
    cut_short = {"role": "polluter", "nodes": [SETTER], "complete": False}
    words = Measurement(cause=cut_short).cause_words
    assert (words["verb"], words["role"]) == ("fails only after", "polluter")


def test_a_refused_classification_is_the_rows_one_problem():
    with pytest.raises(UploadInvalid) as refused:
        parse_report(body([dependent(SETS_UP, classification="order-dependent")]), {})
    assert [(p.row, p.field) for p in refused.value.problems] == [(0, "classification")]


def test_each_test_it_names_has_a_page_outside_the_test_set(client_for, viewer, suite, today):
    rows = [dependent(TOGETHER), measurement(POLLUTERS[0])]
    report_ingest(suite=suite, body=body(rows), actor="ci", dry_run=True)
    assert not Node.objects.filter(nodeid=POLLUTERS[1]).exists()
    report = report_ingest(suite=suite, body=body(rows), actor="ci").upload
    html = client_for(viewer).get(reverse("report", args=[suite.slug, report.pk])).content
    hrefs = re.findall(r'href="([^"]+)"', cause_span(html.decode()))
    assert hrefs == [link(suite, nodeid) for nodeid in POLLUTERS]
    for href in hrefs:
        assert client_for(viewer).get(href).status_code == 200
    unseen = Node.objects.get(nodeid=POLLUTERS[1])
    assert (unseen.first_seen, unseen.last_seen) == (None, None)
    known = known_nodes(suite, today).values_list("nodeid", flat=True)
    assert set(known) == {NODE, POLLUTERS[0]}


def test_the_report_page_reads_causes_without_a_query_more(client_for, viewer, suite):
    client = client_for(viewer)

    def queries(cause) -> int:
        rows = [dependent(cause, f"t.py::test_{bool(cause)}_{i}") for i in range(30)]
        report = report_ingest(suite=suite, body=body(rows), actor="ci").upload
        with CaptureQueriesContext(connection) as run:
            html = client.get(reverse("report", args=[suite.slug, report.pk])).content
        assert html.count(b'class="cause"') == (30 if cause else 0)
        return len(run)

    assert queries(TOGETHER) == queries(None)


def test_the_latest_panel_names_it_too(client_for, viewer, suite):
    report_ingest(suite=suite, body=body([dependent(SETS_UP)]), actor="ci")
    panel = client_for(viewer).get(node_page(suite.slug, NODE), {"panel": "latest"},
                                   headers={"HX-Request": "true"}).content.decode()
    span = cause_span(panel)
    assert re.findall(r'href="([^"]+)"', span) == [link(suite, SETTER)]
    assert span.endswith(" (state-setter)</span>")
