"""Talking to a live board over real HTTP, as CI does.

Every answer is checked against the board's own OpenAPI document: its status must be
documented for the operation, and its body must match the documented schema. So every
API test is also a test that the document describes what the API really does.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from email.message import Message
from functools import cache

import jsonschema_rs

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
    headers: Message
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
        url = self.url + path + ("?" + urllib.parse.urlencode(query) if query else "")
        request = urllib.request.Request(url, data=body, headers=sent, method=method)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                answer = Answer(response.status, response.headers, response.read())
        except urllib.error.HTTPError as exc:
            answer = Answer(exc.code, exc.headers, exc.read())
        assert_documented(method, urllib.parse.urlsplit(url).path, answer)
        return answer

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


def new_token(suite, scope="write", name="") -> str:
    """A fresh token of the suite; the plaintext, which the board never stores."""
    return token_create(suite=suite, scope=scope, actor="@lea", name=name)[1]
