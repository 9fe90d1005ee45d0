"""The API under schemathesis: generated requests, valid and invalid, against the served
OpenAPI document, in-process. No answer may be a server error, and every answer must be
documented: its status, its content type, its headers and its body's schema. A request
the document calls invalid must be refused.

FUZZ_EXAMPLES sets the generated cases per operation (CI's dedicated run uses 1000).
"""

from __future__ import annotations

import json
import math
import os
import zlib
from urllib.parse import parse_qsl

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Err
from schemathesis.pytest.plugin import SchemaHandleMark
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from flakeboard.rules import EVIDENCE_MAX_LENGTH, META_MAX_LENGTH, NODEID_MAX_LENGTH
from ledger.suites import suite_create
from ledger.tokens import token_create
from runs.models import Report, VerdictBatch
from tests.wide_text import wide

pytestmark = [pytest.mark.fuzz, pytest.mark.django_db]

FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "50"))
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
]
SUITE = "acme"
# One case in EXPLORE keeps its generated suite and Authorization header, so the fuzzer
# also knocks on other suites' doors with made-up tokens; the rest use a real write token.
EXPLORE = 8

schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", get_wsgi_application())
HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


@pytest.fixture
def write_token(db):
    suite = suite_create(slug=SUITE, name="Acme payments")
    return token_create(suite=suite, scope="write", actor="@lea", name="fuzz")[1]


@pytest.fixture(autouse=True)
def _keep_the_test_connection():
    """The WSGI app runs in this thread, inside the test's transaction: like Django's test
    client, keep the end of each request from closing that connection."""
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


@pytest.fixture
def cases(request):
    """Counts this operation's generated cases; afterwards, unless a case failed, checks
    there were enough of them: an operation reached a handful of times is not fuzzed. The
    count is kept as the test's ``fuzzed_cases`` property (a --junitxml report of family
    xunit1 lists it)."""
    counted = {"cases": 0, "failed": False, "operation": None}
    yield counted
    request.node.user_properties += [("operation", counted["operation"]),
                                     ("fuzzed_cases", counted["cases"])]
    if not counted["failed"]:
        assert counted["cases"] >= min(FUZZ_EXAMPLES, 20), (request.node.name, counted)


def _explores(case) -> bool:
    """Whether this case keeps its generated door; decided by its own data, so that
    Hypothesis can replay it."""
    seed = repr((case.path_parameters, case.headers, case.query)).encode()
    return zlib.crc32(seed) % EXPLORE == 0


@schema.parametrize()
@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
    ],
)
def test_api_answers_every_request_as_documented(case, write_token, cases):
    # A generated Host header is the deployment's business, not the API's: Django refuses
    # a host outside ALLOWED_HOSTS with 400 before any view runs.
    case.headers = {name: value for name, value in (case.headers or {}).items()
                    if name.lower() != "host"}
    if not _explores(case):
        if case.path_parameters and "suite" in case.path_parameters:
            case.path_parameters["suite"] = SUITE
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {write_token}"}
    cases["cases"] += 1
    cases["operation"] = case.operation.label
    try:
        case.call_and_validate(checks=CHECKS)
    except BaseException:
        cases["failed"] = True
        raise


# The edges of the calendar, where date arithmetic overflows: found by hand after the
# fuzzer, kept here so that they are tried on every run; then year 1 and 9999 at either
# end, and one past them, in each bucket and source.
CALENDAR_EDGES = [
    "to=0001-01-01", "to=0001-01-29", "from=9999-12-31", "from=9999-12-03",
    "from=0001-01-01&to=0001-01-01&bucket=week", "from=9999-12-31&to=9999-12-31&bucket=week",
    "from=0001-01-01", "to=9999-12-31", "from=0001-01-01&to=9999-12-31",
    "from=9999-12-31&to=0001-01-01&source=reports", "from=0001-01-01&bucket=week&source=reports",
    "to=9999-12-31&bucket=week", "from=10000-01-01", "to=0000-12-31", "from=-0001-01-01",
]


@pytest.mark.parametrize("query", CALENDAR_EDGES)
def test_trends_at_the_edges_of_the_calendar(write_token, query):
    case = schema["/api/v1/suites/{suite}/trends"]["GET"].Case(
        path_parameters={"suite": SUITE}, headers={"Authorization": f"Bearer {write_token}"},
        query=dict(parse_qsl(query)),
    )
    response = case.call_and_validate(checks=CHECKS)
    assert response.status_code in (200, 422), response.text[:300]


# Every status each operation can answer, from the code: its successes, then no or a bad
# token (401), the wrong suite or scope (403), a bad parameter (422), and for uploads a
# body that is not JSON (400), too large (413) or not declared JSON (415).
ANSWERS = {
    "GET /api/v1/suites/{suite}/ledger": {"200", "304", "401", "403", "422"},
    "GET /api/v1/token": {"200", "401"},
    "POST /api/v1/suites/{suite}/reports": {"200", "201", "400", "401", "403", "413", "415",
                                            "422"},
    "POST /api/v1/suites/{suite}/verdicts": {"200", "201", "400", "401", "403", "413", "415",
                                             "422"},
    "GET /api/v1/suites/{suite}/trends": {"200", "401", "403", "422"},
    "GET /api/v1/suites/{suite}/status": {"200", "401", "403"},
    "POST /api/v1/suites/{suite}/junit": {"200", "201", "400", "401", "403", "413", "415",
                                          "422"},
    "GET /api/v1/suites/{suite}/targets": {"200", "401", "403", "422"},
    "POST /api/v1/suites/{suite}/tiers": {"200", "400", "401", "403", "413", "415", "422"},
    "POST /api/v1/suites/{suite}/junit/order": {"200", "400", "401", "403", "413", "415",
                                                "422"},
    "POST /api/v1/suites/{suite}/failures": {"200", "400", "401", "403", "413", "415",
                                             "422"},
    "POST /api/v1/suites/{suite}/diagnoses": {"200", "400", "401", "403", "413", "415",
                                              "422"},
    "PUT /api/v1/suites/{suite}/codeowners": {"200", "400", "401", "403", "413", "415", "422"},
    "PUT /api/v1/suites/{suite}/impact": {"200", "400", "401", "403", "413", "415", "422"},
    "POST /api/v1/suites/{suite}/impact/nodes": {"200", "400", "401", "403", "413", "415",
                                                 "422"},
    "GET /api/v1/suites/{suite}/reports": {"200", "401", "403", "422"},
    "GET /api/v1/suites/{suite}/verdicts": {"200", "401", "403", "422"},
    "GET /api/v1/suites/{suite}/reports/{id}": {"200", "401", "403", "404"},
    "GET /api/v1/suites/{suite}/verdicts/{id}": {"200", "401", "403", "404"},
    "GET /api/v1/suites/{suite}/entries/{id}/events": {"200", "401", "403", "404"},
}


def test_every_status_an_operation_answers_is_documented():
    documented = {
        operation.ok().label: set(operation.ok().definition.raw["responses"])
        for operation in schema.get_all_operations()
    }
    assert documented == ANSWERS


def test_every_operation_is_fuzzed():
    """Every operation of the OpenAPI document is one of the fuzzing test's cases: read off
    the schema its parametrisation walks at collection (filters included), so this holds
    alone and in any order. How many cases each gets, the fuzzing test checks itself."""
    documented = {
        f"{method.upper()} {path}"
        for path, item in schema.raw_schema["paths"].items()
        for method in item
        if method in HTTP_METHODS
    }
    parametrised = SchemaHandleMark.get(test_api_answers_every_request_as_documented)
    assert parametrised is not None, "the fuzzing test is no longer parametrised by a schema"
    results = list(parametrised.get_all_operations())
    # An operation schemathesis cannot read becomes a failing test, not a fuzzed one.
    assert [r.err() for r in results if isinstance(r, Err)] == []
    assert {r.ok().label for r in results} == documented


# --- the length edges and odd numbers, fuzzed ---------------------------------------------
# Each upload's texts at their limit and one character past it, in characters of every
# UTF-8 width (tests/wide_text.py), alone or among other rows, in the body or the query:
# taken and stored exactly, or refused naming the row and the field; and every number of
# an upload (and dry_run) odd: NaN, the infinities, minus zero, integers past 64 bits,
# booleans, digits of other scripts. Each answer is checked against the document as above.

UPLOADS = {
    "reports": {
        "rows": "measurements", "node": "nodeid",
        "row": {"nodeid": "", "n": 200, "fails": 0},
        "texts": [("row", "nodeid", NODEID_MAX_LENGTH), ("envelope", "commit", META_MAX_LENGTH),
                  ("envelope", "branch", META_MAX_LENGTH),
                  ("envelope", "evidence", EVIDENCE_MAX_LENGTH),
                  ("query", "commit", META_MAX_LENGTH), ("query", "branch", META_MAX_LENGTH),
                  ("query", "evidence", EVIDENCE_MAX_LENGTH)],
        "numbers": [("row", "n"), ("row", "fails"), ("row", "upper95"), ("row", "seed_base"),
                    ("row", "tier"), ("envelope", "selected_total")],
    },
    "verdicts": {
        "rows": "records", "node": "node",
        "row": {"node": "", "property_check": "pass", "fixture_lock": "match",
                "flake_status": "stable"},
        "texts": [("row", "node", NODEID_MAX_LENGTH), ("row", "fixture_manifest", META_MAX_LENGTH),
                  ("envelope", "patch", META_MAX_LENGTH), ("envelope", "commit", META_MAX_LENGTH),
                  ("envelope", "evidence", EVIDENCE_MAX_LENGTH),
                  ("query", "patch", META_MAX_LENGTH), ("query", "evidence", EVIDENCE_MAX_LENGTH)],
        "numbers": [("row", "seed"), ("row", "tier")],
    },
}
ODD_DIGITS = ["\N{SUPERSCRIPT TWO}", "\N{ARABIC-INDIC DIGIT THREE}", "\N{CIRCLED DIGIT ONE}",
              "\N{FULLWIDTH DIGIT ONE}", "\N{MATHEMATICAL DOUBLE-STRUCK DIGIT ZERO}"]
ODD_NUMBERS = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 0.5, 2**63, -(2**63) - 1, 10**30]),
    st.integers(), st.floats(), st.booleans(), st.sampled_from(ODD_DIGITS),
)


def _upload_case(kind: str, token: str, *, rows: int, start: int, body_of=None, query=None):
    shape = UPLOADS[kind]
    node = shape["node"]
    made = [{**shape["row"], node: f"tests/test_fuzz_edges.py::test_{start}[{i}]"}
            for i in range(rows)]
    body = body_of(made) if body_of else {shape["rows"]: made}
    operation = schema[f"/api/v1/suites/{{suite}}/{kind}"]["POST"]
    # Sent as the bytes Python's json writes: UTF-8 on the wire, and NaN and the
    # infinities as the tokens the budget script writes.
    return operation.Case(path_parameters={"suite": SUITE}, media_type="application/json",
                          headers={"Authorization": f"Bearer {token}"}, query=query,
                          body=json.dumps(body, ensure_ascii=False).encode())


def _stored_text(kind: str, answer: dict, place: str, field: str, index: int) -> str:
    shape = UPLOADS[kind]
    if field == shape["node"]:
        return answer[shape["rows"]][index][field]
    upload = (Report if kind == "reports" else VerdictBatch).objects.get(pk=answer["id"])
    if place == "row":
        return upload.verdicts.get(position=index).fixture_manifest
    return getattr(upload, field)


@pytest.mark.parametrize("kind", list(UPLOADS))
@settings(max_examples=FUZZ_EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_uploads_at_the_length_edges(write_token, kind, data):
    place, field, limit = data.draw(st.sampled_from(UPLOADS[kind]["texts"]), label="text")
    width = data.draw(st.sampled_from([1, 2, 3, 4]), label="width")
    over = data.draw(st.booleans(), label="one over")
    rows = data.draw(st.integers(1, 3), label="rows")
    index = data.draw(st.integers(0, rows - 1), label="index")
    start = data.draw(st.integers(0, 10**9), label="start")
    value = wide(width, limit + over, start=start)
    if field == "fixture_manifest":  # a digest: hex digits after sha256:, in any width drawn
        value = "sha256:" + ("9f2c" * limit)[: limit + over - len("sha256:")]

    def body_of(made):
        if place == "row":
            made[index][field] = value
        if place == "query":
            return made
        return {UPLOADS[kind]["rows"]: made, **({field: value} if place == "envelope" else {})}

    case = _upload_case(kind, write_token, rows=rows, start=start, body_of=body_of,
                        query={field: value} if place == "query" else None)
    response = case.call_and_validate(checks=CHECKS)
    answer = response.json()
    if over:
        assert response.status_code == 422, answer
        first = answer["details"][0]
        assert (first["row"], first["field"]) == (index if place == "row" else None, field)
        assert first["code"] in ("invalid_nodeid", "too_long")
    else:
        assert response.status_code in (200, 201), answer  # 200: the same body again
        assert _stored_text(kind, answer, place, field, index) == value


@pytest.mark.parametrize("kind", list(UPLOADS))
@settings(max_examples=FUZZ_EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_uploads_with_odd_numbers(write_token, kind, data):
    place, field = data.draw(st.sampled_from(UPLOADS[kind]["numbers"]), label="number")
    number = data.draw(ODD_NUMBERS, label="value")
    dry_run = data.draw(st.sampled_from(["1", "true", *ODD_DIGITS]), label="dry_run")

    def body_of(made):
        if place == "row":
            made[0][field] = number
            return made
        return {UPLOADS[kind]["rows"]: made, field: number}

    case = _upload_case(kind, write_token, rows=1, start=0, body_of=body_of,
                        query={"dry_run": dry_run})
    response = case.call_and_validate(checks=CHECKS)
    assert response.status_code in (200, 422), response.text[:300]
    if response.status_code == 422:
        first = response.json()["details"][0]
        assert first["field"] in (field, "dry_run"), (first, field, number)
