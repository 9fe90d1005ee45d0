"""Which database a request reads from, when ``READ_DATABASE_URL`` names a replica.

A PostgreSQL streaming replica answers the pages' and the read API's GETs. Everything else
reads the primary: every write request; the gate's reads (what decides a verdict or an
upload's answer: the ledger CI fetches, the status, the stored reports and verdict
batches, the token check); the admin, sign-in, ``/healthz`` and ``/metrics``; and every
request of a client that wrote within ``READ_AFTER_WRITE_SECONDS``, so that the page
after a form shows what it saved though the replica lags behind.

That client is told apart by a signed, timestamped cookie set on each answer to a write
request; its age is checked on the server, so an old or forged mark counts for nothing.
An API client that keeps no cookies reads the gate's answers from the primary anyway.

``ReadRouting`` (a middleware) decides once per request, before anything reads, and sets
``ROUTE`` for the request's duration: a context variable, so that each of gunicorn's
threads sees only its own request. ``web.replica``'s router reads it for each query.
"""

from __future__ import annotations

import re
from contextvars import ContextVar

from django.conf import settings
from django.core.exceptions import MiddlewareNotUsed
from django.core.signing import BadSignature

PRIMARY = "default"
REPLICA = "replica"
READS = frozenset({"GET", "HEAD"})
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})

# What a request outside any (a command, a test, a thread of its own) reads from.
ROUTE: ContextVar[str] = ContextVar("flakeboard_read_route", default=PRIMARY)

# The reads that stay on the primary whatever the method: the gate's (a verdict or an
# upload's answer depends on them), and the board's own machinery.
GATE_READS = re.compile(
    r"/api/v1/(token|suites/[^/]+/(ledger|status|reports|verdicts)(/\d+)?)/?"
    r"|/(admin|accounts)/.*"
    r"|/(healthz|metrics)"
)

MARK_COOKIE = "flakeboard_wrote"
MARK_SALT = "flakeboard.read_routing"


def read_alias(method: str, path: str, wrote_recently: bool) -> str:
    """The database a request reads from: the replica only for a read of a page or of
    the read API, by a client that has not just written."""
    if method not in READS or wrote_recently or GATE_READS.fullmatch(path):
        return PRIMARY
    return REPLICA


def replica_configured() -> bool:
    return REPLICA in settings.DATABASES


def wrote_recently(request) -> bool:
    """Whether this client's last write was answered within READ_AFTER_WRITE_SECONDS."""
    try:
        request.get_signed_cookie(
            MARK_COOKIE, salt=MARK_SALT, max_age=settings.READ_AFTER_WRITE_SECONDS
        )
    except (KeyError, BadSignature):
        return False
    return True


class ReadRouting:
    """Sets ``ROUTE`` for each request (cleared after) and marks the client that writes.
    Not in the chain at all unless a replica is configured."""

    def __init__(self, get_response):
        if not replica_configured():
            raise MiddlewareNotUsed
        self.get_response = get_response

    def __call__(self, request):
        token = ROUTE.set(read_alias(request.method, request.path_info, wrote_recently(request)))
        try:
            response = self.get_response(request)
        finally:
            ROUTE.reset(token)
        if request.method in WRITES:
            response.set_signed_cookie(
                MARK_COOKIE, "1", salt=MARK_SALT, max_age=settings.READ_AFTER_WRITE_SECONDS,
                secure=settings.SESSION_COOKIE_SECURE, httponly=True, samesite="Lax",
            )
        return response
