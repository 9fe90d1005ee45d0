"""API tokens at the door: 401 without a valid token, 403 for the wrong scope or suite."""

from io import StringIO

import pytest
from django.core.management import call_command

from ledger.models import ApiToken
from ledger.tokens import token_revoke
from tests.api_http import API, Board, new_token
from tests.helpers import body, measurement, record

ENDPOINTS = [
    ("GET", "/suites/{slug}/ledger", None),
    ("GET", "/suites/{slug}/trends", None),
    ("POST", "/suites/{slug}/reports", body([measurement("a::x")])),
    ("POST", "/suites/{slug}/verdicts", body([record("a::x")])),
]
UPLOADS = [e for e in ENDPOINTS if e[0] == "POST"]
READS = [e for e in ENDPOINTS if e[0] == "GET"]


@pytest.fixture
def board(live_server):
    return Board(live_server.url)


def call(board, endpoint, slug, token=None, headers=None):
    method, path, payload = endpoint
    return board.call(method, API + path.format(slug=slug), token=token, body=payload,
                      headers=headers)


def assert_error(answer, status, code):
    assert (answer.status, answer.error) == (status, code), answer.raw
    assert answer.json["message"]
    assert isinstance(answer.json["details"], list)


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: f"{e[0]} {e[1]}")
def test_no_token_is_401_with_a_bearer_challenge(board, suite, endpoint):
    answer = call(board, endpoint, suite.slug)
    assert_error(answer, 401, "unauthorized")
    assert answer.headers["WWW-Authenticate"].startswith("Bearer")
    assert "Authorization: Bearer" in answer.json["message"]


@pytest.mark.parametrize(
    "header",
    ["Bearer", "Bearer not-a-token", "Bearer fbw_short", "Basic dXNlcjpwYXNz",
     "Bearer fbw_" + "x" * 300],
)
def test_a_malformed_or_unknown_token_is_401(board, suite, header):
    answer = call(board, READS[0], suite.slug, headers={"Authorization": header})
    assert_error(answer, 401, "invalid_token")
    assert 'error="invalid_token"' in answer.headers["WWW-Authenticate"]


def test_a_token_with_a_wrong_tail_is_401(board, suite):
    raw = new_token(suite, "read")
    assert_error(call(board, READS[0], suite.slug, raw[:-2] + "zz"), 401, "invalid_token")
    assert call(board, READS[0], suite.slug, raw).status == 200


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: f"{e[0]} {e[1]}")
def test_a_revoked_token_is_401(board, suite, endpoint):
    raw = new_token(suite, "write")
    token = ApiToken.objects.get(suite=suite)
    token_revoke(token=token, actor="@lea")
    assert_error(call(board, endpoint, suite.slug, raw), 401, "invalid_token")


@pytest.mark.parametrize("endpoint", UPLOADS, ids=lambda e: f"{e[0]} {e[1]}")
def test_a_read_token_cannot_upload(board, suite, endpoint):
    answer = call(board, endpoint, suite.slug, new_token(suite, "read"))
    assert_error(answer, 403, "wrong_scope")
    assert suite.reports.count() == 0 and suite.batches.count() == 0


@pytest.mark.parametrize("endpoint", READS, ids=lambda e: f"{e[0]} {e[1]}")
def test_read_and_write_tokens_both_read(board, suite, endpoint):
    assert call(board, endpoint, suite.slug, new_token(suite, "read")).status == 200
    assert call(board, endpoint, suite.slug, new_token(suite, "write")).status == 200


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: f"{e[0]} {e[1]}")
def test_a_token_of_suite_a_cannot_touch_suite_b(board, suite, other_suite, endpoint):
    raw = new_token(suite, "write")
    assert_error(call(board, endpoint, other_suite.slug, raw), 403, "wrong_suite")
    assert other_suite.reports.count() == 0 and other_suite.batches.count() == 0


def test_a_suite_that_does_not_exist_is_refused_like_another_suite(board, suite):
    answer = call(board, READS[0], "no-such-suite", new_token(suite, "read"))
    assert_error(answer, 403, "wrong_suite")


def test_use_is_recorded_on_the_token(board, suite):
    raw = new_token(suite, "read")
    assert ApiToken.objects.get(suite=suite).last_used_at is None
    call(board, READS[0], suite.slug, raw)
    assert ApiToken.objects.get(suite=suite).last_used_at is not None


def test_the_token_tells_its_suite_and_scope(board, suite):
    answer = board.get(f"{API}/token", token=new_token(suite, "read", name="nightly"))
    assert answer.status == 200
    assert answer.json["suite"]["slug"] == suite.slug
    assert (answer.json["scope"], answer.json["name"]) == ("read", "nightly")


def test_the_database_holds_no_plaintext_token(board, suite):
    raws = [new_token(suite, "read"), new_token(suite, "write")]
    for raw in raws:
        assert call(board, READS[0], suite.slug, raw).status == 200
    dump = StringIO()
    call_command("dumpdata", stdout=dump)
    assert all(raw not in dump.getvalue() for raw in raws)
    assert all(raw[12:] not in dump.getvalue() for raw in raws)  # nor its secret part
    assert ApiToken.objects.filter(prefix__in=[r[:12] for r in raws]).count() == 2
