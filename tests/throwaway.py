"""A throwaway board for the tests that need real processes: its own database (an SQLite
file, or a fresh PostgreSQL database beside the configured one), migrated by manage.py,
optionally served by gunicorn; and the HTTP clients that load it, run as separate
processes with `python -m tests.throwaway <role> <json arguments>`.

This module imports no Django at the top: the client processes need only the standard
library.
"""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "correct horse battery staple"


def configured_backend() -> str:
    url = os.environ.get("DATABASE_URL", "")
    return "postgresql" if url.startswith(("postgres://", "postgresql://")) else "sqlite"


class Board:
    """A database of its own, with manage.py and (when served) gunicorn pointed at it."""

    def __init__(self, tmp_path: Path, backend: str):
        self.tmp_path = tmp_path
        self.backend = backend
        self.server: subprocess.Popen | None = None
        self.url = ""
        if backend == "postgresql":
            base = urllib.parse.urlsplit(os.environ["DATABASE_URL"])
            self.db_name = f"flakeboard_throwaway_{secrets.token_hex(4)}"
            self._admin_url = base._replace(path="/postgres").geturl()
            self.database_url = base._replace(path=f"/{self.db_name}").geturl()
            self._admin(f'CREATE DATABASE "{self.db_name}"')
        else:
            self.database_url = f"sqlite:///{tmp_path / 'board.sqlite3'}"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("DJANGO")},
            "DATABASE_URL": self.database_url,
            "DJANGO_SETTINGS_MODULE": "flakeboard.settings",
            "PYTHONPATH": str(ROOT),
            "DEBUG": "false",
            "SECRET_KEY": secrets.token_urlsafe(60),
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "SECURE_SSL_REDIRECT": "false",
            "SECURE_COOKIES": "false",
            "STATICFILES_BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage",
            "LOG_LEVEL": "ERROR",
        }
        self.manage("migrate", "--noinput", "-v0")

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self._admin_url, autocommit=True) as conn:
            conn.execute(sql)

    def manage(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env,
            capture_output=True, text=True, timeout=900,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"manage.py {args[0]} failed:\n{done.stdout}\n{done.stderr}")
        return done

    def run(self, code: str) -> object:
        """Run Python in a Django shell on this board; it prints one JSON line last."""
        done = self.manage("shell", "-c", code)
        return json.loads(done.stdout.strip().splitlines()[-1])

    def serve(self, *, workers: int, threads: int = 1, options: tuple[str, ...] = ()) -> str:
        port = free_port()
        self.log = (self.tmp_path / "gunicorn.log").open("w")
        self.server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "flakeboard.wsgi", "--bind", f"127.0.0.1:{port}",
             "--workers", str(workers), "--threads", str(threads), "--timeout", "300",
             "--error-logfile", "-", "--log-level", "warning", *options],
            cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
        )
        self.url = f"http://127.0.0.1:{port}"
        wait_until_up(self.url + "/healthz", self.server)
        return self.url

    def call(self, path: str, token: str, body: bytes | None = None) -> tuple[int, str]:
        """One API request to the served board, on a connection of its own."""
        request = urllib.request.Request(
            self.url + path, data=body, method="POST" if body else "GET",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        status, raw = _call(request)
        return status, raw.decode()

    def server_log(self) -> str:
        return (self.tmp_path / "gunicorn.log").read_text()

    def close(self) -> None:
        if self.server is not None:
            self.server.terminate()
            self.server.wait(timeout=60)
            self.log.close()
        if self.backend == "postgresql":
            self._admin(f'DROP DATABASE IF EXISTS "{self.db_name}" WITH (FORCE)')


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def deployed_board(tmp_path: Path, *, workers: int = 2, options: tuple[str, ...] = (),
                   backend: str = "sqlite", **environ: str) -> Iterator[Board]:
    """A board served as deployed: gunicorn with its settings (flakeboard/gunicorn.py, which
    makes /metrics count across workers), on a database of its own (an SQLite file unless
    ``backend`` says otherwise), with the suite ``acme`` and a write token of it
    (``board.token``); stopped after."""
    board = Board(tmp_path, backend)
    board.env.pop("PROMETHEUS_MULTIPROC_DIR", None)  # gunicorn's settings make the folder
    board.env.update(environ)
    try:
        board.manage("create_suite", "acme")
        done = board.manage("create_token", "acme", "--scope", "write")
        board.token = done.stdout.strip().splitlines()[-1]
        board.serve(workers=workers, options=("-c", "python:flakeboard.gunicorn", *options))
        yield board
    finally:
        board.close()


def wait_until_up(url: str, process: subprocess.Popen) -> None:
    """Poll the health check until the server answers (or has died)."""
    for _ in range(600):
        if process.poll() is not None:
            raise AssertionError("the server exited before it answered")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError("the server did not answer")


def run_clients(jobs: list[tuple[str, dict]], module: str = "tests.throwaway") -> list:
    """Start one process per job, all at once; each returns its list of results. A role
    is one of ``module``'s, which runs as ``python -m <module> <role> <json arguments>``."""
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", module, role, json.dumps(args)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for role, args in jobs
    ]
    results = []
    for process in processes:
        out, err = process.communicate(timeout=900)
        assert process.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


# --- the clients (run in their own processes) -----------------------------------------


def _call(request: urllib.request.Request, opener=None) -> tuple[int, bytes]:
    opener = opener or urllib.request.build_opener()
    try:
        with opener.open(request, timeout=300) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def upload_client(args: dict) -> list[dict]:
    """Send each upload in turn, as CI does: a Bearer token and a JSON body."""
    results = []
    for upload in args["uploads"]:
        request = urllib.request.Request(
            f"{args['url']}/api/v1/suites/{args['suite']}/{upload['kind']}",
            data=json.dumps(upload["body"]).encode(), method="POST",
            headers={"Authorization": f"Bearer {args['token']}",
                     "Content-Type": "application/json"},
        )
        status, raw = _call(request)
        answer = json.loads(raw) if raw.startswith(b"{") else {}
        results.append({"key": upload["key"], "kind": upload["kind"], "status": status,
                        "id": answer.get("id"), "duplicate": answer.get("duplicate")})
    return results


class Browser:
    """An owner at the board: signs in, then posts forms with their CSRF token."""

    TOKEN = re.compile(rb'name="csrfmiddlewaretoken" value="([^"]+)"')

    def __init__(self, url: str, username: str):
        self.url = url
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()),
            _NoRedirect(),
        )
        status = self.post("/accounts/login/", {"username": username, "password": PASSWORD},
                           form="/accounts/login/")
        assert status == 302, f"{username} could not sign in ({status})"

    def post(self, path: str, data: dict, *, form: str) -> int:
        status, page = _call(urllib.request.Request(self.url + form), self.opener)
        match = self.TOKEN.search(page)
        if status != 200 or match is None:
            return status
        data = {**data, "csrfmiddlewaretoken": match.group(1).decode()}
        request = urllib.request.Request(
            self.url + path, data=urllib.parse.urlencode(data).encode(), method="POST",
            headers={"Referer": self.url + form},
        )
        return _call(request, self.opener)[0]


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def answer(opener, request, statuses: list[int]) -> tuple[int, str, bytes]:
    """Send the request: its status (noted in ``statuses`` too), Location and body."""
    try:
        with opener.open(request, timeout=300) as response:
            got = response.status, "", response.read()
    except urllib.error.HTTPError as exc:
        got = exc.code, exc.headers.get("Location", ""), exc.read()
    statuses.append(got[0])
    return got


class Session(Browser):
    """A signed-in person who posts a form the moment it is due: the CSRF token of one
    form page serves the whole session. Every answer's status is noted in ``statuses``."""

    def __init__(self, url: str, username: str, form: str):
        super().__init__(url, username)
        self.statuses = [200, 302]  # the sign-in
        self.token = self.TOKEN.search(self.send(form)[2]).group(1).decode()

    def send(self, path: str, data: dict | None = None) -> tuple[int, str, bytes]:
        """GET, or POST ``data`` as a form: the status, the Location and the page."""
        if data is not None:
            data = urllib.parse.urlencode({**data, "csrfmiddlewaretoken": self.token}).encode()
        request = urllib.request.Request(self.url + path, data, {"Referer": self.url + path})
        return answer(self.opener, request, self.statuses)


def owner_client(args: dict) -> list[dict]:
    """Renew and clear entries through the pages, as an owner does."""
    browser = Browser(args["url"], args["username"])
    base = f"/suites/{args['suite']}/ledger"
    results = []
    for action in args["actions"]:
        pk = action["entry"]
        if action["do"] == "renew":
            data = {"expires": args["expires"], "evidence": action["evidence"], "owner": "",
                    "note": "still flaky"}
        else:
            data = {"note": "fixed upstream"}
        path = f"{base}/{pk}/{action['do']}/"
        status = browser.post(path, data, form=path)
        results.append({**action, "status": status})
    return results


def racing_owners(args: dict) -> list[dict]:
    """Two owners, signed in, post a renewal of the same entry at the same moment."""
    browsers = [Browser(args["url"], name) for name in args["usernames"]]
    path = f"/suites/{args['suite']}/ledger/{args['entry']}/renew/"
    ready = threading.Barrier(len(browsers))
    results: list[dict] = [{} for _ in browsers]

    def renew(i: int) -> None:
        browser = browsers[i]
        status, page = _call(urllib.request.Request(browser.url + path), browser.opener)
        token = Browser.TOKEN.search(page).group(1).decode()
        data = {"expires": args["expires"], "evidence": args["evidence"][i], "owner": "",
                "note": f"renewed by {args['usernames'][i]}", "csrfmiddlewaretoken": token}
        request = urllib.request.Request(
            browser.url + path, data=urllib.parse.urlencode(data).encode(), method="POST",
            headers={"Referer": browser.url + path},
        )
        ready.wait()
        status, page = _call(request, browser.opener)
        results[i] = {"status": status, "needs_new_evidence": b"needs new evidence" in page}

    threads = [threading.Thread(target=renew, args=(i,)) for i in range(len(browsers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


ROLES = {"upload": upload_client, "owner": owner_client, "race": racing_owners}

if __name__ == "__main__":
    print(json.dumps(ROLES[sys.argv[1]](json.loads(sys.argv[2]))))
