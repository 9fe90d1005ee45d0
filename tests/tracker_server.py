"""A fake issue tracker on 127.0.0.1, one kind at a time (GitHub REST v3, GitLab REST v4,
Jira Cloud REST v3): it keeps every request (method, path, headers, JSON body) and
answers as the documented API does, or with the statuses queued in ``fail_next``."""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Seen:
    method: str
    path: str
    headers: dict  # their names in lower case
    body: dict | None


class FakeTracker:
    def __init__(self, kind: str):
        self.kind = kind
        self.seen: list[Seen] = []
        self.fail_next: list[int] = []
        self.issues: dict[str, str] = {}  # key -> state ("open" or "closed")
        # Set, the fake holds each request once it has arrived until ``release`` is set.
        self.arrived: threading.Event | None = None
        self.release = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                fake.seen.append(Seen(self.command, self.path,
                                      {k.lower(): v for k, v in self.headers.items()},
                                      json.loads(raw) if raw else None))
                if fake.arrived is not None:
                    fake.arrived.set()
                    assert fake.release.wait(30)
                if fake.fail_next:
                    status, answer = fake.fail_next.pop(0), {"message": "refused"}
                else:
                    status, answer = fake.route(self.command, self.path)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_PUT = _answer

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.site = f"http://127.0.0.1:{self.server.server_port}"

    def _opened(self) -> str:
        number = len(self.issues) + 1
        key = f"FLAKY-{number}" if self.kind == "jira" else str(number)
        self.issues[key] = "open"
        return key

    def route(self, method: str, path: str) -> tuple[int, dict]:
        routes = {"github": self._github, "gitlab": self._gitlab, "jira": self._jira}
        return routes[self.kind](method, path)

    def _github(self, method, path):
        if method == "GET" and path == "/repos/acme/shop":
            return 200, {"full_name": "acme/shop"}
        if method == "POST" and path == "/repos/acme/shop/issues":
            key = self._opened()
            return 201, {"number": int(key),
                         "html_url": f"https://github.com/acme/shop/issues/{key}"}
        if found := re.fullmatch(r"/repos/acme/shop/issues/(\d+)(/comments)?", path):
            key, comments = found.groups()
            if method == "PATCH":
                self.issues[key] = "closed"
            return (201 if comments else 200), {"state": self.issues.get(key, "open")}
        return 404, {"message": "Not Found"}

    def _gitlab(self, method, path):
        base = "/api/v4/projects/acme%2Fshop"
        if method == "GET" and path == base:
            return 200, {"path_with_namespace": "acme/shop"}
        if method == "POST" and path == f"{base}/issues":
            key = self._opened()
            return 201, {"iid": int(key), "web_url": f"https://gitlab.com/acme/shop/-/issues/{key}"}
        if found := re.fullmatch(re.escape(base) + r"/issues/(\d+)(/notes)?", path):
            key, notes = found.groups()
            if method == "PUT":
                self.issues[key] = "closed"
            return (201 if notes else 200), {"state": {"open": "opened"}.get(
                self.issues.get(key, "open"), "closed")}
        return 404, {"message": "404 Not found"}

    def _jira(self, method, path):
        if method == "GET" and path == "/rest/api/3/myself":
            return 200, {"displayName": "Flake Bot"}
        if method == "POST" and path == "/rest/api/3/issue":
            key = self._opened()
            return 201, {"key": key, "id": "10001", "self": f"{self.site}/rest/api/3/issue/1"}
        if found := re.fullmatch(r"/rest/api/3/issue/(FLAKY-\d+)(/comment|/transitions)?"
                                 r"(\?fields=status)?", path):
            key, tail, _ = found.groups()
            if tail == "/transitions" and method == "GET":
                return 200, {"transitions": [
                    {"id": "11", "to": {"statusCategory": {"key": "indeterminate"}}},
                    {"id": "31", "to": {"statusCategory": {"key": "done"}}}]}
            if tail == "/transitions":
                self.issues[key] = "closed"
                return 204, {}
            if tail == "/comment":
                return 201, {"id": "100"}
            category = "done" if self.issues.get(key) == "closed" else "new"
            return 200, {"fields": {"status": {"statusCategory": {"key": category}}}}
        return 404, {"errorMessages": ["not found"]}

    def requests(self, method: str | None = None) -> list[Seen]:
        return [seen for seen in self.seen if method in (None, seen.method)]
