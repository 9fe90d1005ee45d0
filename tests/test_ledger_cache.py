"""The ledger GET's cache and fast path (issue 15): never a stale ledger, one query a call.

The served bytes are cached per suite, ledger revision, policy hash and day. Each input of
that key is changed here in turn: the ETag is new, the bytes are new wherever that input
shows in them, and the client's old ETag gets 200, never 304. The fast path (a middleware
ahead of the API router) answers exactly as the API does, headers included, and leaves
every refusal to the API.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.cache import cache, caches
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from flakeboard.settings import _cache
from ledger.api import fastpath
from ledger.models import ApiToken
from ledger.quarantine import quarantine_clear, quarantine_create, quarantine_renew
from ledger.settings_services import fixture_pin_set, policy_update
from ledger.tiers import tier_rule_add, tier_rule_remove
from ledger.tokens import LAST_USED_RESOLUTION, token_authenticate, token_revoke
from runs.ingest import report_ingest
from tests.api_http import new_token
from tests.helpers import body, measurement

FLAKY = "tests/test_ingest.py::test_stream_backpressure"
OTHER = "tests/test_export.py::test_csv_quoting"


@pytest.fixture(autouse=True, params=["locmem://", "redis://"])
def cache_url(request, settings):
    """Each test on each cache a deployment may use: each worker's own memory, and a Redis
    server every worker shares (CACHE_URL), where one worker's bytes are another's."""
    url = request.param
    if url == "redis://":
        url = request.getfixturevalue("redis_url")
    settings.CACHES = {"default": _cache(url)}
    cache.clear()
    yield url
    cache.clear()


@pytest.fixture
def roomy(suite):
    suite.max_quarantined_share = 1.0
    suite.save()
    return suite


@pytest.fixture
def read(roomy):
    return new_token(roomy, "read")


@pytest.fixture
def served(read):
    """What one client is served: ``served()`` for the compact view, ``served("full")``."""
    client = Client()

    def get(view=None, etag=None, query=None, token=read):
        path = f"/api/v1/suites/acme/ledger{query if query is not None else ''}"
        if view is not None and query is None:
            path += f"?view={view}"
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        if etag:
            headers["If-None-Match"] = etag
        return client.get(path, headers=headers)

    return get


@pytest.fixture
def fast_hits(monkeypatch):
    """The answers the fast path gave (None where it left the request to the API)."""
    seen = []
    answer = fastpath.LedgerFastPath.answer

    def spy(request):
        seen.append(response := answer(request))
        return response

    monkeypatch.setattr(fastpath.LedgerFastPath, "answer", staticmethod(spy))
    return seen


def quarantine(suite, nodeid, today, days=20):
    return quarantine_create(suite=suite, nodeid=nodeid, owner="@finley",
                             expires=today + timedelta(days=days), evidence="ci/run-1",
                             actor="@finley", today=today, n=200, fails=5)


class Client304:
    """A CI job that keeps its copy of the ledger and sends its ETag back each time."""

    def __init__(self, get, view=None):
        self.get, self.view = get, view
        first = get(view)
        assert first.status_code == 200
        self.etag, self.body = first["ETag"], first.content

    def assert_unchanged(self):
        answer = self.get(self.view, etag=self.etag)
        assert answer.status_code == 304
        assert answer["ETag"] == self.etag

    def assert_changed(self, *, bytes_change=True):
        """The old ETag is answered with 200 and a new one; the bytes moved if they should."""
        answer = self.get(self.view, etag=self.etag)
        assert answer.status_code == 200, "the cache answered an old ETag with 304"
        assert answer["ETag"] != self.etag
        assert (answer.content != self.body) is bytes_change
        fresh = self.get(self.view, etag=self.etag)
        assert fresh.status_code == 200 and fresh.content == answer.content
        self.etag, self.body = answer["ETag"], answer.content
        self.assert_unchanged()


def test_entries_change_the_compact_ledger_and_its_etag(roomy, served, today):
    ci = Client304(served)
    entry = quarantine(roomy, FLAKY, today)
    ci.assert_changed()
    assert FLAKY in json.loads(ci.body)
    quarantine_renew(entry=entry, expires=today + timedelta(days=25), evidence="ci/run-2",
                     actor="@finley", today=today)
    ci.assert_changed()
    assert json.loads(ci.body)[FLAKY]["evidence"] == "ci/run-2"
    quarantine_clear(entry=entry, note="fixed", actor="@finley")
    ci.assert_changed()
    assert json.loads(ci.body) == {}


def test_tier_rules_change_the_compact_ledger_and_stated_tiers_do_not(roomy, served, today):
    quarantine(roomy, FLAKY, today)
    quarantine(roomy, OTHER, today)
    ci = Client304(served)
    rule = tier_rule_add(suite=roomy, glob="tests/test_ingest.py::*", tier=0, actor="@lea")
    ci.assert_changed()
    assert list(json.loads(ci.body)) == [OTHER]
    tier_rule_remove(rule=rule, actor="@lea")
    ci.assert_changed()
    assert sorted(json.loads(ci.body)) == sorted([FLAKY, OTHER])
    # An upload that states tier 1 for a quarantined node is flagged, and voids nothing.
    report_ingest(suite=roomy, body=body([measurement(OTHER, tier=1)]), actor="ci")
    ci.assert_unchanged()
    assert sorted(json.loads(ci.body)) == sorted([FLAKY, OTHER])
    report_ingest(suite=roomy, body=body([measurement("tests/test_x.py::test_ok")]),
                  actor="ci")
    ci.assert_unchanged()


def test_the_policy_and_the_pin_change_the_full_view(roomy, served, today):
    quarantine(roomy, FLAKY, today)
    full, compact = Client304(served, "full"), Client304(served)
    policy_update(suite=roomy, actor="@lea", max_upper_rate=0.03, min_runs=300,
                  max_quarantined_share=1.0, max_quarantine_days=30)
    full.assert_changed()
    assert json.loads(full.body)["policy"]["min_runs"] == 300
    compact.assert_changed(bytes_change=False)  # the revision moved; the entries did not
    fixture_pin_set(suite=roomy, actor="@lea", manifest="sha256:" + "feed" * 16, seed=7)
    full.assert_changed()
    assert json.loads(full.body)["fixture_pin"] == {"manifest": "sha256:" + "feed" * 16, "seed": 7}
    compact.assert_unchanged()


def test_a_new_day_changes_the_full_view(roomy, served, today, monkeypatch):
    quarantine(roomy, FLAKY, today, days=1)
    full, compact = Client304(served, "full"), Client304(served)
    assert json.loads(full.body)["entries"][0]["state"] == "expiring"
    real_now = timezone.now
    monkeypatch.setattr(timezone, "now", lambda: real_now() + timedelta(days=2))
    full.assert_changed()
    facts = json.loads(full.body)
    assert (facts["today"], facts["entries"][0]["state"], facts["entries"][0]["age_days"]) \
        == ((today + timedelta(days=2)).isoformat(), "expired", 2)
    compact.assert_unchanged()  # the compact ledger holds no state: same bytes, same tag


def test_renaming_the_suite_changes_the_full_view(roomy, served):
    full = Client304(served, "full")
    roomy.name = "Acme billing"  # the admin's edit: no service, no revision
    roomy.save(update_fields=["name"])
    full.assert_changed()
    assert json.loads(full.body)["suite"]["name"] == "Acme billing"


def test_a_cached_ledger_costs_one_query_and_no_build(
    roomy, served, today, monkeypatch, django_assert_num_queries
):
    quarantine(roomy, FLAKY, today)
    for view in (None, "full"):
        first = served(view)
        assert first.status_code == 200

        def refuse(*args, **kwargs):
            raise AssertionError("a cached ledger was built again")

        with monkeypatch.context() as patch:
            patch.setattr("ledger.api.ledger.ledger_for_gate", refuse)
            patch.setattr("ledger.api.ledger.ledger_full", refuse)
            with django_assert_num_queries(1):
                again = served(view)
            with django_assert_num_queries(1):
                not_modified = served(view, etag=first["ETag"])
        assert (again.status_code, again.content) == (200, first.content)
        assert not_modified.status_code == 304


def test_token_authentication_is_one_indexed_query(roomy, read):
    assert ApiToken._meta.get_field("prefix").unique  # the lookup's index
    token_authenticate(read)  # the first use writes last_used_at
    with CaptureQueriesContext(connection) as queries:
        token = token_authenticate(read)
    assert len(queries) == 1
    assert "prefix" in queries[0]["sql"] and "JOIN" in queries[0]["sql"]
    assert token.suite == roomy and token.suite.ledger_revision == roomy.ledger_revision
    orm = ApiToken.objects.select_related("suite").get(pk=token.pk)
    for model, stored in ((token, orm), (token.suite, orm.suite)):
        fields = [f.attname for f in type(model)._meta.concrete_fields]
        assert [getattr(model, f) for f in fields] == [getattr(stored, f) for f in fields]


def test_last_used_is_written_at_most_once_a_minute(roomy, read, monkeypatch):
    def writes():
        with CaptureQueriesContext(connection) as queries:
            assert token_authenticate(read) is not None
        return sum(q["sql"].startswith("UPDATE") for q in queries)

    assert writes() == 1
    assert writes() == 0
    real_now = timezone.now
    monkeypatch.setattr(timezone, "now", lambda: real_now() + LAST_USED_RESOLUTION / 2)
    assert writes() == 0
    monkeypatch.setattr(timezone, "now", lambda: real_now() + LAST_USED_RESOLUTION * 1.5)
    assert writes() == 1
    assert writes() == 0


def test_a_revoked_token_is_refused_on_its_next_call(roomy, read, served, fast_hits):
    assert served().status_code == 200
    token_revoke(token=ApiToken.objects.get(prefix=read[:12]), actor="@lea")
    answer = served()
    assert answer.status_code == 401 and answer.json()["error"] == "invalid_token"
    assert fast_hits[-1] is None  # refusals are the API's own


def normal_path_query(view):
    """The same request, in a form the fast path leaves to the API (a trailing ``&``)."""
    return "?&" if view is None else f"?view={view}&"


@pytest.mark.parametrize("view", [None, "compact", "full"])
def test_the_fast_path_answers_as_the_api_does(roomy, read, served, fast_hits, today, view):
    quarantine(roomy, "tests/ünïcode.py::test_ß[ø]", today)
    fast = served(view)
    normal = served(query=normal_path_query(view))
    assert [hit is not None for hit in fast_hits] == [True, False]
    assert fast.status_code == normal.status_code == 200
    assert fast.content == normal.content
    assert dict(fast.headers) == dict(normal.headers)
    for header in ("ETag", "Cache-Control", "Content-Security-Policy", "X-Frame-Options",
                   "X-Content-Type-Options", "Referrer-Policy", "Content-Length"):
        assert header in fast.headers

    fast_304 = served(view, etag=fast["ETag"])
    normal_304 = served(query=normal_path_query(view), etag=fast["ETag"])
    assert fast_304.status_code == normal_304.status_code == 304
    assert dict(fast_304.headers) == dict(normal_304.headers)
    assert fast_hits[2] is not None and fast_hits[3] is None


def test_refusals_and_odd_requests_are_left_to_the_api(roomy, other_suite, served, fast_hits):
    write = new_token(roomy, "write")
    others = new_token(other_suite, "read")
    cases = [
        ({"token": None}, 401, "unauthorized"),
        ({"token": "fbr_not-a-real-token"}, 401, "invalid_token"),
        ({"token": others}, 403, "wrong_suite"),
        ({"view": "everything"}, 422, "invalid_request"),
    ]
    for kwargs, status, code in cases:
        answer = served(**kwargs)
        assert (answer.status_code, answer.json()["error"]) == (status, code)
    assert fast_hits == [None] * len(cases)
    assert served(token=write).status_code == 200  # a write token reads too
    assert fast_hits[-1] is not None
    head = Client().head("/api/v1/suites/acme/ledger",
                         headers={"Authorization": f"Bearer {write}"})
    assert head.status_code == 405 and len(fast_hits) == len(cases) + 1


def test_the_ledger_is_served_when_the_cache_fails(roomy, served, today, monkeypatch):
    quarantine(roomy, FLAKY, today)

    def broken(*args, **kwargs):
        raise ConnectionError("the cache server is down")

    backend = caches["default"]  # this thread's, which the view uses
    monkeypatch.setattr(backend, "get", broken)
    monkeypatch.setattr(backend, "set", broken)
    answer = served()
    assert answer.status_code == 200 and FLAKY in answer.json()


@pytest.mark.parametrize(("url", "backend", "location"), [
    ("locmem://", "locmem.LocMemCache", "flakeboard"),
    ("redis://cache.internal:6379/1", "redis.RedisCache", "redis://cache.internal:6379/1"),
    ("memcached://127.0.0.1:11211", "memcached.PyMemcacheCache", "127.0.0.1:11211"),
    ("dummy://", "dummy.DummyCache", "flakeboard"),
])
def test_cache_url_names_the_backend(url, backend, location):
    assert _cache(url) == {"BACKEND": f"django.core.cache.backends.{backend}",
                           "LOCATION": location}


def test_an_unknown_cache_url_is_refused():
    with pytest.raises(ImproperlyConfigured, match="CACHE_URL"):
        _cache("mongodb://db")
