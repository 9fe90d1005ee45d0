"""Calling the board as a CI job does, and checking every answer it gives.

A test sends what CI sends: a method, a path and query, headers (a bearer token, a content
type) and a body's raw bytes; it reads what CI reads: the status, the headers and the
answer's raw bytes. Two transports carry the same request:

- ``Board``: over real HTTP, with urllib as the CI client, to the live server (pytest-django's,
  in a thread of this process). The test is transactional: the server sees only what is
  committed, and the database is emptied after the test.
- ``InProcessBoard``: through Django's handler in the test's own thread, with the WSGI environ
  a server makes of that request (the same middlewares, views and answers), inside the
  test's transaction, which is rolled back after it. What only a real server and real
  commits show stays with ``Board``: what the server adds or enforces (``Date``, keep-alive,
  requests at once, a connection's limits), the CI client and the files it fetches, locks
  and row-change notifications across connections. A service's own transactions are
  savepoints there; where one must be the outermost (``lock_suite`` asks for a transaction
  and finds the test's), only ``Board`` can tell.

Every answer is checked against the board's own OpenAPI document: its status must be
documented for the operation, and its body must match the documented schema. So every
API test is also a test that the document describes what the API really does.
"""

from __future__ import annotations

import io
import json
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from functools import cache
from http.client import HTTPMessage

import jsonschema_rs
from django.test.client import ClientHandler

from flakeboard.api import api
from ledger.tokens import token_create

API = "/api/v1"


@cache
def openapi_document() -> dict:
    return json.loads(json.dumps(api.get_openapi_schema(path_prefix="api/v1/")))


def _operation(method: str, path: str) -> dict | None:
    for template, operations in openapi_document()["paths"].items():
        pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$"
        if re.match(pattern, path):
            return operations.get(method.lower())
    return None


def schema_validator(schema: dict) -> jsonschema_rs.Draft202012Validator:
    root = {**schema, "components": openapi_document()["components"]}
    return jsonschema_rs.Draft202012Validator(root, validate_formats=True)


def assert_documented(method: str, path: str, answer: Answer) -> None:
    operation = _operation(method, path)
    if operation is None:
        return  # not an API operation (the health check, the client download)
    documented = operation["responses"].get(str(answer.status))
    assert documented is not None, f"{method} {path}: {answer.status} is not documented"
    content = documented.get("content")
    if content is None:
        assert answer.raw == b"", f"{method} {path}: {answer.status} should have no body"
        return
    media = (answer.headers.get("Content-Type") or "").partition(";")[0].strip()
    assert media in content, f"{method} {path}: {media} is not documented ({sorted(content)})"
    if media == "text/plain":
        answer.raw.decode("utf-8")  # a text answer is UTF-8, whatever it says
        return
    schema = content["application/json"]["schema"]
    errors = [e.message for e in schema_validator(schema).iter_errors(answer.json)]
    assert not errors, f"{method} {path} {answer.status} differs from its schema: {errors}"


@dataclass
class Answer:
    status: int
    headers: HTTPMessage
    raw: bytes

    @property
    def json(self):
        return json.loads(self.raw)

    @property
    def error(self) -> str:
        return self.json["error"]


class Board:
    """A live board, called over HTTP with urllib as a CI job would."""

    def __init__(self, url: str):
        self.url = url.rstrip("/")

    def call(self, method, path, *, token=None, body=None, query=None, headers=None,
             content_type="application/json") -> Answer:
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        if body is not None and content_type is not None:
            sent["Content-Type"] = content_type
        target = path + ("?" + urllib.parse.urlencode(query) if query else "")
        answer = self.send(method, target, body, sent)
        assert_documented(method, urllib.parse.urlsplit(self.url + target).path, answer)
        return answer

    def send(self, method: str, target: str, body: bytes | None, headers: dict) -> Answer:
        request = urllib.request.Request(self.url + target, data=body, headers=headers,
                                         method=method)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return Answer(response.status, response.headers, response.read())
        except urllib.error.HTTPError as exc:
            return Answer(exc.code, exc.headers, exc.read())

    def get(self, path, **kwargs) -> Answer:
        return self.call("GET", path, **kwargs)

    def post(self, path, body, **kwargs) -> Answer:
        return self.call("POST", path, body=body, **kwargs)

    def ledger(self, slug, token, **kwargs) -> Answer:
        return self.get(f"{API}/suites/{slug}/ledger", token=token, **kwargs)

    def report(self, slug, token, body, **kwargs) -> Answer:
        return self.post(f"{API}/suites/{slug}/reports", body, token=token, **kwargs)

    def verdicts(self, slug, token, body, **kwargs) -> Answer:
        return self.post(f"{API}/suites/{slug}/verdicts", body, token=token, **kwargs)

    def trends(self, slug, token, **kwargs) -> Answer:
        return self.get(f"{API}/suites/{slug}/trends", token=token, **kwargs)


class InProcessBoard(Board):
    """The board answering in the test's own thread and transaction: the request goes to
    Django's handler (the test client's, which leaves the test's connection open) as the
    WSGI environ a server makes of what urllib sends, and the answer comes back as the
    server would send it (its headers, its cookies, a streamed body read whole). A redirect
    is answered as it is, where urllib would follow it."""

    HOST = "testserver"  # an allowed host under test, as on the live server

    def __init__(self):
        super().__init__(f"http://{self.HOST}")
        self.handler = ClientHandler(enforce_csrf_checks=True)

    def send(self, method: str, target: str, body: bytes | None, headers: dict) -> Answer:
        path, _, query = target.partition("?")
        path.encode("ascii")  # the only request line http.client sends
        environ = {
            "REQUEST_METHOD": method,
            "PATH_INFO": urllib.parse.unquote(path, "iso-8859-1"),
            "QUERY_STRING": query,
            "SCRIPT_NAME": "",
            "SERVER_NAME": self.HOST,
            "SERVER_PORT": "80",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1",
            "HTTP_HOST": self.HOST,
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body or b""),
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": False,
            "wsgi.multiprocess": True,
            "wsgi.run_once": False,
        }
        if body is not None or method in ("POST", "PUT", "PATCH"):
            environ["CONTENT_LENGTH"] = str(len(body or b""))  # as http.client sends it
        for name, value in headers.items():
            value.encode("latin-1")  # a header http.client can send, as it sends it
            if "_" in name:
                continue  # dropped by the live server (and nginx): WSGI would read a dash
            key = name.upper().replace("-", "_")
            environ[key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}"] = (
                value.strip())
        response = self.handler(environ)
        raw = b"".join(response)  # a streamed answer whole; the handler closes it after
        sent = HTTPMessage()
        for name, value in response.items():
            sent[name] = value
        for cookie in response.cookies.values():
            sent["Set-Cookie"] = cookie.output(header="").strip()
        return Answer(response.status_code, sent, raw)


def new_token(suite, scope="write", name="") -> str:
    """A fresh token of the suite; the plaintext, which the board never stores."""
    return token_create(suite=suite, scope=scope, actor="@lea", name=name)[1]
