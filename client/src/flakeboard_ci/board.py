"""Talking to the board: its JSON API over HTTP, with retries while it cannot be reached,
and the credential it is sent: a Flakeboard token, or the CI's own OIDC id token."""

from __future__ import annotations

import base64
import json
import sys
import time
import urllib.parse

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
        # A CI's id token is asked for when first needed, and again once it is near its end.
        bearer = self.token() if callable(self.token) else self.token
        headers = {
            "Authorization": f"Bearer {bearer}",
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
        # Imported here, when the board is first asked: measure's workers load this file as
        # their plugin and never ask it, and these imports took a tenth of their start-up.
        import http.client
        import urllib.error
        import urllib.request

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


# The CI's OIDC id token (docs/trusted-ci.md), sent in place of a Flakeboard token to a suite
# that trusts its CI. GitLab hands it to the job in the variable ``id_tokens:`` names; GitHub
# Actions, with ``permissions: id-token: write``, gives a URL and a token to ask for it with.
ID_TOKEN_VARIABLE = "FLAKEBOARD_ID_TOKEN"  # noqa: S105 (a variable's name)
GITHUB_REQUEST_URL = "ACTIONS_ID_TOKEN_REQUEST_URL"
GITHUB_REQUEST_TOKEN = "ACTIONS_ID_TOKEN_REQUEST_TOKEN"  # noqa: S105 (a variable's name)
ID_TOKEN_RENEW = 60  # seconds before its exp: a GitHub id token is asked for again


class IdTokenUnavailable(Exception):
    """The CI would not give an id token: why, in a sentence (exit 3, as an outage)."""


def credential_from(environ, audience, timeout):
    """What the board is sent as the bearer, and whether it is a CI's id token: the
    id token in FLAKEBOARD_ID_TOKEN (GitLab's ``id_tokens:``, named for this board, so it
    wins), else FLAKEBOARD_TOKEN, else an id token GitHub Actions gives the job; ("", False)
    when the job has none of them."""
    given = environ.get(ID_TOKEN_VARIABLE, "").strip()
    if given:
        return given, True
    token = environ.get("FLAKEBOARD_TOKEN", "").strip()
    if token:
        return token, False
    url, request = environ.get(GITHUB_REQUEST_URL, ""), environ.get(GITHUB_REQUEST_TOKEN, "")
    if url and request:
        return GitHubIdToken(url, request, audience, timeout), True
    return "", False


class GitHubIdToken:
    """GitHub Actions' id token for ``audience`` (the board's address): asked for when
    first called, and again when the one held is within ID_TOKEN_RENEW of its expiry (a
    gate that measures can outlast it)."""

    def __init__(self, url, request_token, audience, timeout):
        self.url, self.request_token = url, request_token
        self.audience, self.timeout = audience, timeout
        self.value, self.expires = "", 0.0

    def __call__(self):
        if not self.value or time.time() >= self.expires - ID_TOKEN_RENEW:
            self.value = self._requested()
            self.expires = _expiry(self.value)
        return self.value

    def _requested(self):
        import http.client
        import urllib.request

        joiner = "&" if "?" in self.url else "?"
        url = self.url + joiner + urllib.parse.urlencode({"audience": self.audience})
        request = urllib.request.Request(url, headers={  # noqa: S310 (GitHub's own URL)
            "Authorization": f"bearer {self.request_token}", "Accept": "application/json",
            "User-Agent": f"flakeboard-ci/{VERSION}"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                value = _json(response.read()).get("value")
        except (OSError, http.client.HTTPException) as exc:
            reason = getattr(exc, "reason", None) or f"{type(exc).__name__}: {exc}"
            raise IdTokenUnavailable(
                f"GitHub Actions gave no id token ({GITHUB_REQUEST_URL}): {reason}") from None
        if not isinstance(value, str) or not value:
            raise IdTokenUnavailable("GitHub Actions' answer for an id token holds no value")
        return value


def _expiry(jwt):
    """The ``exp`` of a JWT, read without verifying it (the board verifies): when to ask
    for another; 0 when it names none, so that it is asked for each time."""
    try:
        payload = jwt.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return float(claims.get("exp", 0))
    except (IndexError, ValueError, TypeError, AttributeError):
        return 0.0


def _read_error(exc):
    import http.client

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
