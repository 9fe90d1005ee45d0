"""`make run` on a board with an empty database: quiet until one banner, then the demo served
as a deployed board serves it (DEBUG off: the board's own error pages, collected static files).

It runs the Makefile itself, on a fresh SQLite file, collecting the static files into the
test run's own folder (tests/conftest.py), never the checkout's; the PostgreSQL lane leaves it
out, since one first start says what it checks."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("DATABASE_URL", "").startswith("postgres"),
        reason="the first start is on SQLite; one lane is enough",
    ),
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@contextmanager
def make_run(tmp_path_factory):
    """`make run` on a free port and an empty database, until its /healthz answers."""
    port = free_port()
    env = {**os.environ, "PORT": str(port),
           "DATABASE_URL": f"sqlite:///{tmp_path_factory.mktemp('run') / 'board.sqlite3'}"}
    for name in ("DEBUG", "LOG_LEVEL", "SECRET_KEY", "SECRET_KEY_FILE"):
        env.pop(name, None)
    process = subprocess.Popen(
        ["make", "--no-print-directory", "run"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if fetch(f"{base}/healthz")[0] == 200:
                    break
            except OSError:
                time.sleep(0.25)
        else:
            pytest.fail(f"make run did not serve: exit {process.poll()}")
        yield base, process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        process.communicate(timeout=30)  # and close the pipe


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One board for the module's tests that only ask it."""
    with make_run(tmp_path_factory) as board:
        yield board


def test_debug_is_off_so_a_missing_page_is_the_boards_own(served):
    base, _process = served
    status, page = fetch(f"{base}/no-such-page/")
    assert status == 404
    assert "<title>Not found · Flakeboard</title>" in page
    assert "URLconf" not in page  # Django's debug 404 lists the URL patterns


def test_the_static_files_are_collected_and_served(served):
    base, _process = served
    status, page = fetch(f"{base}/accounts/login/")
    assert status == 200
    stylesheet = page.split('rel="stylesheet" href="', 1)[1].split('"', 1)[0]
    assert stylesheet.startswith("/static/css/board.") and stylesheet.endswith(".css")
    assert stylesheet != "/static/css/board.css"  # the manifest's hashed name
    assert fetch(base + stylesheet)[0] == 200
    # collected into the test run's folder, never the checkout's a parallel run lists
    assert (Path(os.environ["STATIC_ROOT"]) / stylesheet.removeprefix("/static/")).is_file()


def test_the_banner_is_printed_once_and_last(tmp_path_factory):
    """A board of its own: the test stops it to read all it printed."""
    with make_run(tmp_path_factory) as (base, process):
        fetch(f"{base}/no-such-page/")  # a 404 is not logged over the banner
        os.killpg(process.pid, signal.SIGTERM)
        output = process.communicate(timeout=30)[0]
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    banner = [
        f"Flakeboard is at {base}/suites/demo/",
        "Sign in as lead, owner or viewer (admin for /admin/), password flakeboard-demo.",
        "Ctrl-C stops it.",
    ]
    assert output.count("flakeboard-demo") == 1
    assert lines[: len(banner)] == banner, output
    assert not any("Not Found" in line for line in lines), output
