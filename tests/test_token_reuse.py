"""A token's models are made once per process and reused while its row is unchanged
(``ledger.tokens._TokenQuery``); the check that runs on every call still sees at once what
another process changed: a revocation, a new ledger revision, a renamed suite, a changed
setting. Changes here are written with ``QuerySet.update``, as another process's would be.
Inside a test's transaction the check runs on every call (``ledger.changes`` gives no
marker there); tests/test_row_changes.py has the calls that skip it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from ledger.api.auth import suite_for_token
from ledger.models import ApiToken, Suite
from ledger.tokens import LAST_USED_RESOLUTION, token_authenticate
from tests.api_http import new_token


@pytest.fixture
def raw(suite):
    return new_token(suite, "read")


def calls(raw):
    """The token that authenticating ``raw`` gives, and the queries it took."""
    with CaptureQueriesContext(connection) as queries:
        token = token_authenticate(raw)
    return token, [q["sql"] for q in queries]


def test_an_unchanged_row_gives_the_same_models_for_one_query(raw):
    first, _ = calls(raw)
    again, queries = calls(raw)
    assert again is first and again.suite is first.suite
    assert len(queries) == 1 and queries[0].startswith("SELECT")


@pytest.mark.parametrize("change", [
    {"ledger_revision": 41},
    {"slug": "acme-payments"},
    {"name": "Acme billing"},
    {"min_runs": 500},
    {"max_quarantined_share": 0.25},
])
def test_a_suite_changed_elsewhere_is_read_on_the_next_call(suite, raw, change):
    first, _ = calls(raw)
    Suite.objects.filter(pk=suite.pk).update(**change)
    token, queries = calls(raw)
    assert token is not first and len(queries) == 2  # the check, then the models again
    for field, value in change.items():
        assert getattr(token.suite, field) == value


def test_a_token_revoked_elsewhere_is_refused_on_the_next_call(raw):
    assert calls(raw)[0] is not None
    ApiToken.objects.filter(prefix=raw[:12]).update(revoked_at=timezone.now())
    assert calls(raw)[0] is None
    ApiToken.objects.filter(prefix=raw[:12]).update(revoked_at=None)
    assert calls(raw)[0] is not None


def test_a_wrong_secret_with_a_known_prefix_is_refused(raw):
    assert calls(raw)[0] is not None
    forged = raw[:-1] + ("A" if raw[-1] != "A" else "B")
    assert calls(forged)[0] is None
    assert calls(raw)[0] is not None


def test_a_token_deleted_elsewhere_and_made_again_is_its_new_self(suite, other_suite, raw):
    first, _ = calls(raw)
    stored = ApiToken.objects.get(prefix=raw[:12])
    ApiToken.objects.filter(pk=stored.pk).update(suite=other_suite)
    token, _ = calls(raw)
    assert token.suite.slug == "other" and first.suite.slug == "acme"


def test_last_used_is_written_once_across_processes(raw, monkeypatch):
    """Another process's copy of the token also thinks last_used_at is old: its update
    finds the row already written within the minute and writes nothing."""
    token, _ = calls(raw)
    written = ApiToken.objects.get(pk=token.pk).last_used_at
    token.last_used_at = None  # this process's copy, as another process's would be
    _, queries = calls(raw)
    assert any(q.startswith("UPDATE") for q in queries)
    assert ApiToken.objects.get(pk=token.pk).last_used_at == written
    real_now = timezone.now
    monkeypatch.setattr(timezone, "now", lambda: real_now() + LAST_USED_RESOLUTION * 1.5)
    calls(raw)
    assert ApiToken.objects.get(pk=token.pk).last_used_at > written + timedelta(seconds=59)


def test_views_get_a_copy_of_the_suite(raw):
    request = RequestFactory().get("/")
    request.auth = token_authenticate(raw)
    suite = suite_for_token(request, "acme", "read")
    suite.min_runs = 1
    assert token_authenticate(raw).suite.min_runs != 1


def test_the_api_sees_a_rename_elsewhere_at_once(suite, raw):
    client = Client()
    headers = {"Authorization": f"Bearer {raw}"}
    assert client.get("/api/v1/suites/acme/ledger", headers=headers).status_code == 200
    Suite.objects.filter(pk=suite.pk).update(slug="acme-payments")
    assert client.get("/api/v1/suites/acme/ledger", headers=headers).status_code == 403
    assert client.get("/api/v1/suites/acme-payments/ledger", headers=headers).status_code == 200
