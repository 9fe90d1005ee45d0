"""Who may call each API endpoint (SPEC 6a): a token of the suite, of the right scope.

The table is the access rule, cell by cell, with the same callers as the pages' table
(tests/access.py). The API ignores a session: without a token a caller is refused with 401
``unauthorized`` and a Bearer challenge; a revoked token is 401 ``invalid_token``; a read
token that uploads is 403 ``wrong_scope``; another suite's token is 403 ``wrong_suite``. A
refused call stores nothing, and every answer is the one the OpenAPI document describes.

The tests after the table call the board as CI does (tests/api_http.py): malformed and unknown
tokens, what a token says of itself, and tokens kept as digests only.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from flakeboard.api import api
from ledger.models import ApiToken
from tests.access import SIGNED_IN, Request, ask_every_caller, parse, rows
from tests.api_http import API, Answer, assert_documented, new_token
from tests.helpers import body, measurement, record
from tests.junit_files import junit_xml

#    action                        out ousd view ownr lead staf read writ othr revk
TABLE = parse("""
GET  api:ledger                    401 401 401 401 401 401 200 200 403 401
GET  api:token                     401 401 401 401 401 401 200 200 200 401
POST api:reports                   401 401 401 401 401 401 403 201 403 401
POST api:verdicts                  401 401 401 401 401 401 403 201 403 401
POST api:junit                     401 401 401 401 401 401 403 201 403 401
GET  api:trends                    401 401 401 401 401 401 200 200 403 401
GET  api:status                    401 401 401 401 401 401 200 200 403 401
GET  api:targets                   401 401 401 401 401 401 200 200 403 401
POST api:tiers                     401 401 401 401 401 401 200 200 403 401
POST api:junit/order               401 401 401 401 401 401 200 200 403 401
POST api:failures                  401 401 401 401 401 401 200 200 403 401
POST api:diagnoses                 401 401 401 401 401 401 200 200 403 401
PUT  api:codeowners                401 401 401 401 401 401 403 200 403 401
PUT  api:impact                    401 401 401 401 401 401 403 200 403 401
POST api:impact/nodes              401 401 401 401 401 401 200 200 403 401
GET  api:reports                   401 401 401 401 401 401 200 200 403 401
GET  api:verdicts                  401 401 401 401 401 401 200 200 403 401
GET  api:reports/{id}              401 401 401 401 401 401 200 200 403 401
GET  api:verdicts/{id}             401 401 401 401 401 401 200 200 403 401
GET  api:entries/{id}/events       401 401 401 401 401 401 200 200 403 401
GET  api:openapi                   200 200 200 200 200 200 200 200 200 200
""")
# Why each caller is refused, where the table refuses it.
REFUSED_AS = {
    **dict.fromkeys(["out", *SIGNED_IN], "unauthorized"),
    "revoked": "invalid_token",
    "read": "wrong_scope",
    "other": "wrong_suite",
}


def api_request(method: str, action: str, w) -> Request:
    """The request of one table row, with a valid body: only access can stop it."""
    suite = f"{API}/suites/{w.suite.slug}"
    return {
        "api:ledger": Request(f"{suite}/ledger"),
        "api:token": Request(f"{API}/token"),
        "api:reports": Request(f"{suite}/reports",
                               json=body([measurement("tests/test_0.py::test_ok")])),
        "api:verdicts": Request(f"{suite}/verdicts",
                                json=body([record("tests/test_0.py::test_ok")])),
        "api:junit": Request(f"{suite}/junit?commit=abc123", json=junit_xml(
            ("tests.test_0", "test_ok", "passed")), content_type="application/xml"),
        "api:trends": Request(f"{suite}/trends"),
        "api:status": Request(f"{suite}/status"),
        "api:targets": Request(f"{suite}/targets"),
        "api:tiers": Request(f"{suite}/tiers", json=["tests/test_0.py::test_ok"]),
        "api:junit/order": Request(f"{suite}/junit/order?commit=abc123",
                                   json=["tests/test_0.py::test_ok"]),
        "api:failures": Request(f"{suite}/failures", json=["tests/test_0.py::test_ok"]),
        "api:diagnoses": Request(f"{suite}/diagnoses", json=["tests/test_0.py::test_ok"]),
        "api:codeowners": Request(f"{suite}/codeowners", json=b"tests/ @qa-team\n",
                                  content_type="text/plain"),
        "api:impact": Request(f"{suite}/impact", json={
            "commit": "abc123", "map": {"tests/test_0.py::test_ok": ["src/x.py"]}}),
        "api:impact/nodes": Request(f"{suite}/impact/nodes", json=["src/x.py"]),
        "api:reports/{id}": Request(f"{suite}/reports/{w.report.pk}"),
        "api:verdicts/{id}": Request(f"{suite}/verdicts/{w.batch.pk}"),
        "api:entries/{id}/events": Request(f"{suite}/entries/{w.entry.pk}/events"),
        "api:openapi": Request(f"{API}/openapi.json"),
    }[action]


def assert_refused(answer: Answer, status: int, code: str) -> None:
    assert (answer.status, answer.error) == (status, code), answer.raw
    assert answer.json["message"]
    assert isinstance(answer.json["details"], list)
    if status == 401:
        assert answer.headers["WWW-Authenticate"].startswith("Bearer")
    if code == "unauthorized":
        assert "Authorization: Bearer" in answer.json["message"]
    if code == "invalid_token":
        assert 'error="invalid_token"' in answer.headers["WWW-Authenticate"]


@pytest.mark.parametrize(("method", "action"), rows(TABLE))
def test_every_caller_gets_the_status_in_the_table(world, method, action):
    request = api_request(method, action, world)
    cells = ask_every_caller(method, request, world)
    assert {caller: cell.status for caller, cell in cells.items()} == TABLE[(method, action)]
    for caller, cell in cells.items():
        answer = Answer(cell.status, cell.response.headers, cell.response.content)
        assert_documented(method, request.path.partition("?")[0], answer)
        if cell.status in (401, 403):
            assert_refused(answer, cell.status, REFUSED_AS[caller])
        # An upload creates (201); a PUT replaces what it names (200).
        wrote = cell.status == (200 if method == "PUT" else 201)
        assert cell.changed is wrote, caller


def test_the_table_covers_every_operation():
    """A new endpoint cannot slip past the table: a row is its method and its path after
    the suite's (``api:reports/{id}``)."""
    operations = {
        (method.upper(), "api:" + path.removeprefix("/api/v1/").removeprefix("suites/{suite}/"))
        for path, methods in api.get_openapi_schema(path_prefix="/api/v1/")["paths"].items()
        for method in methods
    }
    covered = set(TABLE)
    assert operations <= covered, sorted(operations - covered)


# --- as CI calls ------------------------------------------------------------------------


def ledger_of(board, slug, token=None, headers=None) -> Answer:
    return board.get(f"{API}/suites/{slug}/ledger", token=token, headers=headers)


@pytest.mark.parametrize(
    "header",
    ["Bearer", "Bearer not-a-token", "Bearer fbw_short", "Basic dXNlcjpwYXNz",
     "Bearer fbw_" + "x" * 300],
)
def test_a_malformed_or_unknown_token_is_401(board, suite, header):
    answer = ledger_of(board, suite.slug, headers={"Authorization": header})
    assert_refused(answer, 401, "invalid_token")


def test_a_token_with_a_wrong_tail_is_401(board, suite):
    raw = new_token(suite, "read")
    assert_refused(ledger_of(board, suite.slug, raw[:-2] + "zz"), 401, "invalid_token")
    assert ledger_of(board, suite.slug, raw).status == 200


def test_a_suite_that_does_not_exist_is_refused_like_another_suite(board, suite):
    answer = ledger_of(board, "no-such-suite", new_token(suite, "read"))
    assert_refused(answer, 403, "wrong_suite")


def test_use_is_recorded_on_the_token(board, suite):
    raw = new_token(suite, "read")
    assert ApiToken.objects.get(suite=suite).last_used_at is None
    ledger_of(board, suite.slug, raw)
    assert ApiToken.objects.get(suite=suite).last_used_at is not None


def test_the_token_tells_its_suite_and_scope(board, suite):
    answer = board.get(f"{API}/token", token=new_token(suite, "read", name="nightly"))
    assert answer.status == 200
    assert answer.json["suite"]["slug"] == suite.slug
    assert (answer.json["scope"], answer.json["name"]) == ("read", "nightly")


def test_the_database_holds_no_plaintext_token(board, suite):
    raws = [new_token(suite, "read"), new_token(suite, "write")]
    for raw in raws:
        assert ledger_of(board, suite.slug, raw).status == 200
    dump = StringIO()
    call_command("dumpdata", stdout=dump)
    assert all(raw not in dump.getvalue() for raw in raws)
    assert all(raw[12:] not in dump.getvalue() for raw in raws)  # nor its secret part
    assert ApiToken.objects.filter(prefix__in=[r[:12] for r in raws]).count() == 2
