"""/metrics under gunicorn with several worker processes (flakeboard/gunicorn.py): the
counters add up every worker's, those that have exited included, whichever worker answers
the scrape. A real gunicorn on 127.0.0.1, its own SQLite file, stopped after."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from django.conf import settings
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.slow

SECRET = "metrics-secret-1234"
UPLOADS = 40
MAX_REQUESTS = 10  # each worker exits after this many: the 40 uploads meet five or more


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def call(url, *, token, body=None):
    request = urllib.request.Request(url, data=body, method="POST" if body else "GET",
                                     headers={"Authorization": f"Bearer {token}",
                                              "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.fixture
def board(tmp_path):
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'board.sqlite3'}",
           "METRICS_TOKEN": SECRET, "DEBUG": "false", "SECRET_KEY": "x" * 50,
           "SECURE_SSL_REDIRECT": "false", "SECURE_HSTS_SECONDS": "0", "LOG_LEVEL": "ERROR"}
    for name in ("DJANGO_SETTINGS_MODULE", "PROMETHEUS_MULTIPROC_DIR"):
        env.pop(name, None)  # gunicorn's settings make the folder, as under make run

    def manage(*args) -> str:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=settings.BASE_DIR,
                              env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    manage("migrate", "--noinput", "-v", "0")
    manage("create_suite", "acme")
    token = manage("create_token", "acme", "--scope", "write").strip().splitlines()[-1]
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "python:flakeboard.gunicorn",
         "flakeboard.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "2",
         "--max-requests", str(MAX_REQUESTS), "--log-level", "warning"],
        cwd=settings.BASE_DIR, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=5):
                    break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None
                time.sleep(0.2)
        yield base, token
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def test_one_scrape_counts_every_workers_uploads(board):
    base, token = board
    for i in range(UPLOADS):
        body = json.dumps([{"nodeid": f"tests/test_a.py::test_{i}", "n": 200, "fails": 0}])
        status, text = call(f"{base}/api/v1/suites/acme/reports?commit=c{i}", token=token,
                            body=body.encode())
        assert status == 201, text
    status, text = call(f"{base}/metrics", token=SECRET)
    assert status == 200, text
    counted = {tuple(sorted(sample.labels.items())): sample.value
               for family in text_string_to_metric_families(text)
               for sample in family.samples if sample.name == "flakeboard_uploads_total"}
    # Each worker served at most ten requests before it exited: only the sum is 40.
    assert counted[(("kind", "report"), ("outcome", "accepted"))] == UPLOADS
