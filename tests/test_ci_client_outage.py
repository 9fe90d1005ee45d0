"""The client's outage policy for the ledger: --cache keeps the last good ledger, served
when the board cannot be reached if it is young enough; no traceback when the board goes
away mid-answer."""

import json
import socket
import socketserver
import struct
import time
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path

import pytest

from ledger.quarantine import quarantine_create
from tests.api_http import new_token
from tests.local_server import serving

pytestmark = pytest.mark.slow  # each test starts a real process

CACHED = ("--retries", "0", "ledger", "--cache", "cache")
PY38 = Path.home() / ".pyenv/versions/3.8.18/bin/python3"


def cache_file(folder):
    (path,) = (folder / "cache").glob("ledger-*.json")
    return path


def age_cache(folder, hours):
    """Make the cached ledger ``hours`` old."""
    path = cache_file(folder)
    cached = json.loads(path.read_text())
    cached["fetched_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                         time.gmtime(time.time() - hours * 3600))
    path.write_text(json.dumps(cached))


@pytest.fixture
def cached(run, suite, today, tmp_path):
    """A ledger with an entry expired yesterday, fetched into the cache; its output file
    removed."""
    suite.max_quarantined_share = 1.0
    suite.save()
    for nodeid, days in (("tests/a.py::test_new", 10), ("tests/a.py::test_old", -1)):
        quarantine_create(suite=suite, nodeid=nodeid, owner="@finley", evidence="ci/run-1",
                          expires=today + timedelta(days=days), actor="@finley", today=today,
                          imported=days < 0)
    done = run(*CACHED)
    assert done.returncode == 0, done.stderr
    output = tmp_path / "flake_ledger.json"
    served = json.loads(output.read_text())
    output.unlink()
    return served


def test_a_fetch_fills_the_cache_and_the_next_one_revalidates(run, board, suite, tmp_path,
                                                                cached):
    answer = board.ledger(suite.slug, new_token(suite, "read"))
    stored = json.loads(cache_file(tmp_path).read_text())
    assert stored["etag"] == answer.headers["ETag"]
    assert json.loads(stored["body"]) == answer.json == cached
    age_cache(tmp_path, hours=5)
    again = run(*CACHED)
    assert again.returncode == 0, again.stderr
    assert "304 Not Modified" in again.stdout  # it sent If-None-Match
    assert json.loads((tmp_path / "flake_ledger.json").read_text()) == cached
    refreshed = json.loads(cache_file(tmp_path).read_text())["fetched_at"]
    assert refreshed >= time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 60))
    assert not list((tmp_path / "cache").glob("*.partial"))


@pytest.mark.parametrize("python", [None, PY38])
def test_a_young_cache_stands_in_for_an_unreachable_board(run, tmp_path, cached, dead_url,
                                                          python):
    if python and not python.exists():
        pytest.skip("Python 3.8 is not installed")
    age_cache(tmp_path, hours=5)
    done = run(*CACHED, FLAKEBOARD_URL=dead_url, **({"python": str(python)} if python else {}))
    assert done.returncode == 0, done.stderr
    assert f"WARNING: cannot reach the board at {dead_url}" in done.stderr
    assert "using the CACHED ledger" in done.stderr and "(5h00m old, limit 6h00m)" in \
        done.stderr
    assert json.loads((tmp_path / "flake_ledger.json").read_text()) == cached
    # Judged on today: the entry expired since is still failed.
    assert "EXPIRED tests/a.py::test_old" in done.stdout
    assert "2 quarantine entries of suite acme, 1 expired" in done.stdout


@pytest.mark.parametrize(("hours", "limit", "message"), [
    (7, (), "7h00m old, over the offline limit of 6h00m"),
    (1, ("--offline-max-age", "30m"), "1h00m old, over the offline limit of 30m00s"),
])
def test_an_old_cache_fails_closed(run, tmp_path, cached, dead_url, hours, limit, message):
    age_cache(tmp_path, hours=hours)
    done = run(*CACHED, *limit, FLAKEBOARD_URL=dead_url)
    assert done.returncode == 3
    assert message in done.stderr and "failing closed" in done.stderr
    assert not (tmp_path / "flake_ledger.json").exists()


def test_no_cache_exits_3_saying_so(run, tmp_path, dead_url):
    done = run(*CACHED, FLAKEBOARD_URL=dead_url)
    assert done.returncode == 3
    assert "no cached ledger to fall back on" in done.stderr


@pytest.mark.parametrize("suite_env", [{}, {"FLAKEBOARD_SUITE": "acme"}])
def test_the_cache_does_not_cover_a_refusal(run, tmp_path, cached, suite_env):
    done = run(*CACHED, token="fbr_not-a-real-token", **suite_env)
    assert done.returncode == 4
    assert "401" in done.stderr
    assert not (tmp_path / "flake_ledger.json").exists()


@pytest.mark.parametrize("content", [
    "{not json",
    '{"body": "[]", "etag": "", "slug": "", "url": "", "fetched_at": "2026-01-01T00:00:00Z"}',
    '{"body": "{}", "etag": "", "slug": "", "url": "", "fetched_at": "yesterday"}',
    "[]",
])
def test_a_corrupt_cache_is_no_cache(run, tmp_path, cached, dead_url, content):
    cache_file(tmp_path).write_text(content)
    offline = run(*CACHED, FLAKEBOARD_URL=dead_url)
    assert offline.returncode == 3
    assert "ignoring the corrupt ledger cache" in offline.stderr
    assert "Traceback" not in offline.stderr
    online = run(*CACHED)
    assert online.returncode == 0, online.stderr
    assert json.loads(json.loads(cache_file(tmp_path).read_text())["body"]) == cached


def close_at_once(connection):
    connection.recv(65536)


def headers_then_reset(connection):
    connection.recv(65536)
    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                       b"Content-Length: 5000\r\n\r\n{\"tests/a.py::test")
    # SO_LINGER 0: the close resets the connection mid-body.
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


@pytest.fixture
def dying_board():
    """dying_board(behaviour) is the URL of a board that accepts a connection and does
    ``behaviour`` with it before closing it."""
    with ExitStack() as servers:

        def start(behaviour):
            class Handler(socketserver.BaseRequestHandler):
                def handle(self):
                    behaviour(self.request)

            server = servers.enter_context(
                serving(socketserver.TCPServer(("127.0.0.1", 0), Handler)))
            return f"http://127.0.0.1:{server.server_address[1]}"

        yield start


@pytest.mark.parametrize("behaviour", [close_at_once, headers_then_reset])
@pytest.mark.parametrize("suite_env", [{}, {"FLAKEBOARD_SUITE": "acme"}])
def test_a_board_gone_mid_answer_is_unreachable(run, dying_board, behaviour, suite_env):
    done = run("--retries", "0", "ledger", FLAKEBOARD_URL=dying_board(behaviour), **suite_env)
    assert done.returncode == 3, done.stderr
    assert "cannot reach the board at" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_board_gone_mid_answer_falls_back_on_the_cache(run, tmp_path, cached, dying_board):
    done = run(*CACHED, FLAKEBOARD_URL=dying_board(headers_then_reset))
    assert done.returncode == 0, done.stderr
    assert "using the CACHED ledger" in done.stderr and "Traceback" not in done.stderr
    assert json.loads((tmp_path / "flake_ledger.json").read_text()) == cached
