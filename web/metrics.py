"""The board's Prometheus registry and what is counted as it happens, in this process:
uploads by kind and outcome and how long each ingest took (``observed``, which runs' and
junit's ingest wear: the metric objects live here, below the apps, so that they import web,
not the reverse), the answers with a 5xx status (``ServerErrorCount``) and the requests
that read the primary as the read replica was down (``web.replica``). The scrape
itself, ``GET /metrics``, and what it reads from the database are ``board.metrics``."""

from __future__ import annotations

import functools
from time import perf_counter

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
)

# Our own registry: only the board's metrics, none of the default process collectors.
REGISTRY = CollectorRegistry()
UPLOADS = Counter(
    "flakeboard_uploads", "Uploads by kind (report, signals, junit) and outcome "
    "(accepted, refused, error).", ["kind", "outcome"], registry=REGISTRY,
)
INGEST_SECONDS = Histogram(
    "flakeboard_ingest_duration_seconds", "How long an upload's ingest took, by kind.",
    ["kind"], registry=REGISTRY,
)
SERVER_ERRORS = Counter(
    "flakeboard_http_server_errors", "Answers with a 5xx status.", registry=REGISTRY
)
REPLICA_FALLBACKS = Counter(
    "flakeboard_replica_fallbacks", "Requests sent to the read replica (READ_DATABASE_URL) "
    "that read the primary instead, as the replica could not be reached.", registry=REGISTRY,
)


def observed(kind: str, refusals: tuple[type[Exception], ...]):
    """Count an ingest function's calls by outcome and time them: ``refusals`` are the
    exceptions of an upload refused as invalid; any other exception is an error."""

    def decorate(ingest):
        @functools.wraps(ingest)
        def counted(*args, **kwargs):
            started = perf_counter()
            outcome = "error"
            try:
                result = ingest(*args, **kwargs)
                outcome = "accepted"
                return result
            except refusals:
                outcome = "refused"
                raise
            finally:
                UPLOADS.labels(kind, outcome).inc()
                INGEST_SECONDS.labels(kind).observe(perf_counter() - started)

        return counted

    return decorate


class ServerErrorCount:
    """Counts every answer with a 5xx status (the outermost middleware, so it sees the 500
    Django makes of an exception below it)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.status_code >= 500:
            SERVER_ERRORS.inc()
        return response
