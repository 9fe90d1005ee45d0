"""A ledger GET skips reading its token and suite while no such row has changed
(ledger/changes.py), and still sees every change: one committed by another process (here a
raw connection of the database's driver, which Django does not watch) at once on SQLite and
when its notification arrives on PostgreSQL; one made by this process at once on both.

Runs on whichever database DATABASE_URL selects, outside a test transaction (inside one
the rows are always read)."""

from __future__ import annotations

import time
from importlib import import_module

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext, override_settings
from django.utils import timezone

from ledger import changes
from ledger.models import ApiToken, Suite
from ledger.tokens import token_authenticate
from tests.api_http import new_token

pytestmark = pytest.mark.django_db(transaction=True)
on_postgres = pytest.mark.skipif("connection.vendor != 'postgresql'",
                                 reason="PostgreSQL's notifications")
NOTIFIED_WITHIN = 2.0  # seconds: far above the milliseconds a notification takes
LEDGER = "/api/v1/suites/acme/ledger"


@pytest.fixture
def raw(suite):
    token = new_token(suite, "read")
    for _ in range(3):  # the first calls open the connection and take a marker
        assert token_authenticate(token) is not None
    return token


def reads(raw) -> tuple[ApiToken | None, int]:
    """The token authenticating ``raw`` gives, and how many queries it took."""
    with CaptureQueriesContext(connection) as queries:
        token = token_authenticate(raw)
    return token, len(queries)


def elsewhere(sql: str, params: list) -> None:
    """``sql`` run and committed on a connection of the driver's own, as another process's
    would be: none of this process's watching sees it."""
    other = connection.get_new_connection(connection.get_connection_params())
    try:
        other.cursor().execute(sql, params)
        other.commit()
    finally:
        other.close()


def seen(check) -> float:
    """How long until ``check()`` holds: at once on SQLite, else within NOTIFIED_WITHIN."""
    started = time.monotonic()
    while not check():
        assert connection.vendor == "postgresql", "SQLite sees a commit at once"
        elapsed = time.monotonic() - started
        assert elapsed < NOTIFIED_WITHIN, "the change was never seen"
        time.sleep(0.001)
    return time.monotonic() - started


def placeholder() -> str:
    return "?" if connection.vendor == "sqlite" else "%s"


def test_an_unchanged_token_and_suite_are_not_read_again(raw):
    for _ in range(5):
        token, queries = reads(raw)
        assert token is not None and queries == 0


def test_a_token_revoked_by_another_process_is_refused(raw):
    p = placeholder()
    elsewhere(f"UPDATE ledger_apitoken SET revoked_at = {p} WHERE prefix = {p}",  # noqa: S608
              [f"{timezone.now():%Y-%m-%d %H:%M:%S}", raw[:12]])
    seen(lambda: token_authenticate(raw) is None)
    elsewhere(f"UPDATE ledger_apitoken SET revoked_at = NULL WHERE prefix = {p}",  # noqa: S608
              [raw[:12]])
    seen(lambda: token_authenticate(raw) is not None)


def test_a_revision_bumped_by_another_process_changes_the_etag(raw, suite):
    client = Client()
    auth = {"Authorization": f"Bearer {raw}"}
    etag = client.get(LEDGER, headers=auth)["ETag"]
    assert client.get(LEDGER, headers={**auth, "If-None-Match": etag}).status_code == 304
    elsewhere(f"UPDATE ledger_suite SET ledger_revision = ledger_revision + 1 "  # noqa: S608
              f"WHERE id = {placeholder()}", [suite.pk])
    seen(lambda: client.get(LEDGER, headers={**auth, "If-None-Match": etag}).status_code == 200)
    assert client.get(LEDGER, headers=auth)["ETag"] != etag


@pytest.mark.parametrize("change", [
    lambda suite, raw: Suite.objects.filter(pk=suite.pk).update(slug="acme-payments"),
    lambda suite, raw: ApiToken.objects.filter(prefix=raw[:12]).update(
        revoked_at=timezone.now()),
], ids=["suite renamed", "token revoked"])
def test_a_change_by_this_process_is_seen_at_once(raw, suite, change, monkeypatch):
    # On PostgreSQL, as if its notification were still on its way: no waiting for it.
    monkeypatch.setattr(changes._Listener, "generation", lambda self, connection: (1, 0))
    token_authenticate(raw)
    assert reads(raw)[1] == 0
    change(suite, raw)
    token, queries = reads(raw)
    assert queries >= 1
    assert token is None or token.suite.slug == "acme-payments"


@on_postgres
def test_a_notification_takes_milliseconds(raw):
    elsewhere("UPDATE ledger_apitoken SET revoked_at = %s WHERE prefix = %s",
              [timezone.now(), raw[:12]])
    assert seen(lambda: token_authenticate(raw) is None) < 0.5


@on_postgres
def test_with_listen_url_off_every_call_reads_the_rows(raw):
    with override_settings(LISTEN_URL="off"):
        assert changes.marker(connection) is None
        assert reads(raw)[1] == 1


@on_postgres
def test_without_the_triggers_every_call_reads_the_rows(raw, caplog):
    migration = import_module("ledger.migrations.0001_squashed_0023_node_written_key")
    changes.stop_listening()
    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER flakeboard_apitoken_rows ON ledger_apitoken")
    try:
        changes._listener.retry_at = 0.0
        assert changes.marker(connection) is None
        assert "triggers are missing" in caplog.text
        assert reads(raw)[1] == 1
    finally:
        with connection.cursor() as cursor:
            cursor.execute(migration.DROP)
            cursor.execute(migration.CREATE)
        changes._listener.retry_at = 0.0


@on_postgres
def test_a_lost_listening_connection_reads_the_rows_until_it_reopens(raw, monkeypatch):
    listener = changes._listener
    assert changes.marker(connection) is not None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [listener.conn.info.backend_pid])
    seen(lambda: changes.marker(connection) is None)
    assert reads(raw)[1] == 1
    monkeypatch.setattr(changes, "RETRY_SECONDS", 0.0)
    listener.retry_at = 0.0
    assert changes.marker(connection) is not None
    token_authenticate(raw)  # the check, under the new marker
    assert reads(raw)[1] == 0
