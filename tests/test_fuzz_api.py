"""The API under schemathesis: generated requests, valid and invalid, against the served
OpenAPI document, in-process. No answer may be a server error, and every answer must be
documented: its status, its content type, its headers and its body's schema. A request
the document calls invalid must be refused.

FUZZ_EXAMPLES sets the generated cases per operation (CI's dedicated run uses 1000).
"""

from __future__ import annotations

import os
import zlib

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
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

from ledger.suites import suite_create
from ledger.tokens import token_create

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
    there were enough of them: an operation reached a handful of times is not fuzzed."""
    counted = {"cases": 0, "failed": False}
    yield counted
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
    if not _explores(case):
        if case.path_parameters and "suite" in case.path_parameters:
            case.path_parameters["suite"] = SUITE
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {write_token}"}
    cases["cases"] += 1
    try:
        case.call_and_validate(checks=CHECKS)
    except BaseException:
        cases["failed"] = True
        raise


# The edges of the calendar, where date arithmetic overflows: found by hand after the
# fuzzer, kept here so that they are tried on every run.
CALENDAR_EDGES = [
    "to=0001-01-01", "to=0001-01-29", "from=9999-12-31", "from=9999-12-03",
    "from=0001-01-01&to=0001-01-01&bucket=week", "from=9999-12-31&to=9999-12-31&bucket=week",
]


@pytest.mark.parametrize("query", CALENDAR_EDGES)
def test_trends_at_the_edges_of_the_calendar(write_token, query):
    from django.test import Client

    client = Client(HTTP_AUTHORIZATION=f"Bearer {write_token}", raise_request_exception=False)
    response = client.get(f"/api/v1/suites/{SUITE}/trends?{query}")
    assert response.status_code in (200, 422), response.content[:300]


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
