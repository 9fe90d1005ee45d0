"""Reads apart from writes on a real PostgreSQL streaming replica (READ_DATABASE_URL): a
primary and a standby of the test's own (tests/pg_pair.py), and the board served by
gunicorn against both.

The replica is caught lagging on purpose: its replay of the primary's changes is paused
(``pg_wal_replay_pause``), so what a page shows tells which database it read. A report
uploaded meanwhile is on the primary only: a page that lists it read the primary, one
that does not read the replica."""

from __future__ import annotations

import json
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.pg_pair import primary_and_standby, server_programs
from tests.throwaway import Board, _call
from web.read_routing import MARK_COOKIE

PROGRAMS, MISSING = server_programs()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(PROGRAMS is None, reason=f"no PostgreSQL to replicate: {MISSING}"),
]

SECRET = "replica-metrics-1234"
LOST = "The read replica cannot be reached"
NODE = "tests/test_pay.py::test_refund"

# A signed-in viewer of the suite: their session, made on the primary before the board
# serves (signing in through the form is a write, and would mark the client as one).
VIEWER = """
import json
from django.contrib.auth import get_user_model, BACKEND_SESSION_KEY, HASH_SESSION_KEY
from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore
from ledger.models import Membership, Role, Suite
user = get_user_model().objects.create_user(username="vic", password="x" * 20)
Membership.objects.create(suite=Suite.objects.get(slug="acme"), user=user, role=Role.VIEWER)
session = SessionStore()
session[SESSION_KEY] = str(user.pk)
session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
session[HASH_SESSION_KEY] = user.get_session_auth_hash()
session.create()
print(json.dumps(session.session_key))
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The pair, and the board on it: gunicorn, one worker of four threads (so that its
    log and counters are one process's), reads sent to the standby."""
    with primary_and_standby() as pair, pytest.MonkeyPatch.context() as patch:
        patch.setenv("DATABASE_URL", pair.url(pair.primary_port))
        board = Board(tmp_path_factory.mktemp("replica"), "postgresql")
        try:
            board.env.pop("PROMETHEUS_MULTIPROC_DIR", None)
            board.env.update(
                READ_DATABASE_URL=pair.url(pair.standby_port, board.db_name),
                METRICS_TOKEN=SECRET, LOG_LEVEL="WARNING",
            )
            board.manage("create_suite", "acme")
            board.token = board.manage("create_token", "acme", "--scope", "write") \
                .stdout.strip().splitlines()[-1]
            board.session = board.run(VIEWER)
            pair.caught_up()
            board.serve(workers=1, threads=4, options=("-c", "python:flakeboard.gunicorn"))
            yield pair, board
        finally:
            board.close()


def page(board, path: str, *cookies: str) -> tuple[int, str]:
    request = urllib.request.Request(board.url + path, headers={
        "Cookie": "; ".join([f"sessionid={board.session}", *cookies])})
    status, raw = _call(request)
    return status, raw.decode()


def upload(board, commit: str, runs: int) -> tuple[dict, str]:
    """A report at ``commit``: its answer, and the cookie its answer set (the write mark)."""
    body = json.dumps([{"nodeid": NODE, "n": runs, "fails": 0}]).encode()
    request = urllib.request.Request(
        f"{board.url}/api/v1/suites/acme/reports?commit={commit}", data=body, method="POST",
        headers={"Authorization": f"Bearer {board.token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        assert response.status == 201
        [mark] = [cookie.split(";")[0] for cookie in response.headers.get_all("Set-Cookie")
                  if cookie.startswith(f"{MARK_COOKIE}=")]
        return json.loads(response.read()), mark


@pytest.fixture
def lagging(served):
    """The standby, its replay paused for the test; resumed and caught up after."""
    pair, board = served
    pair.caught_up()
    pair.replay(paused=True)
    try:
        yield pair, board
    finally:
        pair.replay(paused=False)
        pair.caught_up()


def test_the_pages_read_the_replica(lagging):
    pair, board = lagging
    assert pair.sql(pair.standby_port, "SELECT pg_is_in_recovery()") is True
    upload(board, "c0ffee01", 200)
    # Stored on the primary, not yet replayed: the reports page read the standby.
    status, text = page(board, "/suites/acme/reports/")
    assert status == 200
    assert "c0ffee01" not in text and "vic" in text
    assert connected(pair, board)
    assert page(board, "/suites/acme/ledger.csv")[0] == 200  # a server-side cursor
    pair.replay(paused=False)
    pair.caught_up()
    assert "c0ffee01" in page(board, "/suites/acme/reports/")[1]


def test_an_upload_and_the_page_after_it_read_the_primary(lagging):
    _, board = lagging
    first, _ = upload(board, "feed0001", 200)
    # The second report at the commit pools with the first, which only the primary holds.
    second, mark = upload(board, "feed0001", 300)
    assert (first["attempt"], second["attempt"]) == (1, 2)
    assert second["measurements"][0]["pooled"]["n"] == 500
    # The client that wrote reads the primary for a while; another reads the lagging standby.
    assert "feed0001" in page(board, "/suites/acme/reports/", mark)[1]
    assert "feed0001" not in page(board, "/suites/acme/reports/")[1]
    # The stored reports, as CI reads them back, are the gate's: always the primary's.
    status, text = board.call("/api/v1/suites/acme/reports", board.token)
    assert status == 200 and "feed0001" in text


REVOKE = """
import json
from ledger.models import ApiToken
from ledger.tokens import PREFIX_LENGTH, token_revoke
token_revoke(token=ApiToken.objects.get(prefix={raw!r}[:PREFIX_LENGTH]), actor="lead")
print(json.dumps(True))
"""


def test_a_token_revoked_on_the_primary_is_refused_at_once(served):
    pair, board = served
    raw = board.manage("create_token", "acme", "--scope", "read").stdout.strip().splitlines()[-1]
    targets = "/api/v1/suites/acme/targets"
    pair.caught_up()
    assert board.call(targets, raw)[0] == 200  # now known to the worker
    pair.replay(paused=True)
    try:
        board.run(REVOKE.format(raw=raw))
        # The read API reads the replica, which still holds the token as it was.
        assert board.call(targets, raw)[0] == 401
    finally:
        pair.replay(paused=False)


def test_the_board_reads_the_primary_while_the_replica_is_down(served):
    pair, board = served
    upload(board, "dead0001", 200)
    pair.caught_up()
    pair.stop("standby")
    try:
        for _ in range(5):
            status, text = page(board, "/suites/acme/reports/")
            assert status == 200
            assert "dead0001" in text
        assert board.server_log().count(LOST) == 1
        status, text = board.call("/metrics", SECRET)
        assert status == 200
        fallbacks = {sample.name: sample.value
                     for family in text_string_to_metric_families(text)
                     for sample in family.samples}
        assert fallbacks["flakeboard_replica_fallbacks_total"] >= 5
    finally:
        pair.start("standby", pair.standby_port)
        reads_the_replica_again(pair, board)


def connected(pair, board) -> bool:
    """Whether the board holds a connection to the standby."""
    return pair.sql(pair.standby_port, "SELECT count(*) FROM pg_stat_activity "
                    "WHERE datname = %s", (board.db_name,)) > 0


def reads_the_replica_again(pair, board) -> None:
    """Wait until the board reads the restarted standby (it tries again some seconds after
    it lost it), so that the tests after this one find it as before."""
    for _ in range(240):
        assert page(board, "/suites/acme/reports/")[0] == 200
        if connected(pair, board):
            return
        time.sleep(0.25)
    raise AssertionError("the board did not go back to the replica")
