"""Talking to the board: its JSON API over HTTP, with retries while it cannot be reached."""

from __future__ import annotations

import http.client
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from .core import (
    BOARD_NOTICE_HEADER,
    CLIENT_HEADER,
    SOURCE_HASH,
    UNREACHABLE_STATUSES,
    VERSION,
    Refused,
    Unreachable,
    UsageError,
)


class Board:
    def __init__(self, url, token, *, timeout, retries):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.noticed = False

    def call(self, method, path, *, query=None, body=None, headers=None):
        """The decoded JSON answer, its headers; Refused or Unreachable otherwise."""
        _, raw, headers = self.fetch(method, path, query=query, body=body, headers=headers)
        return decoded(raw), headers

    def fetch(self, method, path, *, query=None, body=None, headers=None):
        """The status (2xx or 304), raw body and headers of the answer; Refused or
        Unreachable otherwise."""
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v})
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Accept": "application/json",
            "User-Agent": f"flakeboard-ci/{VERSION}",
            CLIENT_HEADER: SOURCE_HASH,
            **(headers or {}),
        }
        if body is not None:
            headers.setdefault("Content-Type", "application/json")
        attempt = 0
        while True:
            try:
                return self._once(url, method, headers, body)
            except Unreachable:
                # Uploads are idempotent (the board stores a body once), so a retry is safe.
                if attempt >= self.retries:
                    raise
                time.sleep(2 ** attempt)
                attempt += 1

    def _once(self, url, method, headers, body):
        request = urllib.request.Request(  # noqa: S310 (main() allows http and https only)
            url, data=body, headers=headers, method=method
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                self._notice(response.headers)
                return response.status, response.read(), dict(response.headers)
        except urllib.error.HTTPError as exc:
            if exc.code == 304:  # Not Modified: the If-None-Match copy is current
                return exc.code, b"", dict(exc.headers)
            if exc.code in UNREACHABLE_STATUSES:
                raise Unreachable(f"the board answered {exc.code} {exc.reason}") from None
            raise Refused(exc.code, _json(_read_error(exc))) from None
        except (OSError, http.client.HTTPException) as exc:
            # URLError, refused connections, timeouts, resets, an answer cut short alike.
            reason = getattr(exc, "reason", None) or f"{type(exc).__name__}: {exc}"
            raise Unreachable(str(reason)) from None


    def _notice(self, headers):
        """The board's word that it serves another build of this client: said once."""
        notice = headers.get(BOARD_NOTICE_HEADER)
        if notice and not self.noticed:
            self.noticed = True
            print(f"flakeboard_ci.py: {notice}", file=sys.stderr)


def _read_error(exc):
    try:
        return exc.read()
    except (OSError, http.client.HTTPException):
        return b""


def decoded(raw):
    """A 2xx answer's JSON; Unreachable when it is not JSON (an answer cut short)."""
    answer = _json(raw)
    if not isinstance(answer, dict) or answer.get("error") == "not_json":
        raise Unreachable("the board's answer was cut short or is not JSON")
    return answer


def _json(raw):
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {"error": "not_json", "message": raw[:300].decode("utf-8", "replace")}


def suite_slug(board, given):
    if given:
        return given
    answer, _ = board.call("GET", "/api/v1/token")
    return answer["suite"]["slug"]


def read_upload(path):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None


def _upload(board, args, endpoint, body=None, **meta):
    """POST ``body`` (by default the upload file) to the suite's ``endpoint``: the board's
    decoded answer."""
    slug = suite_slug(board, args.suite)
    query = dict(meta, evidence=args.evidence, dry_run="1" if args.dry_run else "")
    answer, _ = board.call("POST", f"/api/v1/suites/{quote(slug)}/{endpoint}", query=query,
                           body=read_upload(args.file) if body is None else body)
    return answer


def quote(slug):
    return urllib.parse.quote(slug, safe="")
