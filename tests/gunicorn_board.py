"""A real board for the tests of several worker processes: gunicorn with the project's
config (flakeboard/gunicorn.py) on a free port of 127.0.0.1, its own SQLite file migrated,
a suite ``acme`` and a write token, stopped after."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from tests.redis_server import free_port


@dataclass
class ServedBoard:
    base: str
    token: str
    env: dict

    def manage(self, *args: str) -> str:
        """``manage.py ARGS`` on the board's database, as another host's cron would."""
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=settings.BASE_DIR,
                              env=self.env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def call(self, path: str, *, token: str | None = None, body: bytes | None = None):
        """The status, headers and text of one request, on a connection of its own."""
        request = urllib.request.Request(
            self.base + path, data=body, method="POST" if body else "GET",
            headers={"Authorization": f"Bearer {token or self.token}",
                     "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, answer.headers, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.headers, error.read().decode()


@contextmanager
def gunicorn_board(folder: Path, *, workers: int = 2, options: tuple = (),
                   **environ: str) -> Iterator[ServedBoard]:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{folder / 'board.sqlite3'}",
           "DEBUG": "false", "SECRET_KEY": "x" * 50, "SECURE_SSL_REDIRECT": "false",
           "SECURE_HSTS_SECONDS": "0", "LOG_LEVEL": "ERROR", **environ}
    for name in ("DJANGO_SETTINGS_MODULE", "PROMETHEUS_MULTIPROC_DIR"):
        env.pop(name, None)  # gunicorn's settings make the folder, as under make run
    board = ServedBoard("", "", env)
    board.manage("migrate", "--noinput", "-v", "0")
    board.manage("create_suite", "acme")
    board.token = board.manage("create_token", "acme", "--scope", "write").strip().splitlines()[-1]
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "python:flakeboard.gunicorn",
         "flakeboard.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", str(workers),
         "--log-level", "warning", *options],
        cwd=settings.BASE_DIR, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    board.base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{board.base}/healthz", timeout=5):
                    break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None
                time.sleep(0.2)
        yield board
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
