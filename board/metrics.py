"""Prometheus metrics: ``GET /metrics`` in the text format, from prometheus-client.

What is counted as it happens is in ``web.metrics`` (its registry, the upload counters and
the 5xx count). Read from the database when scraped: each suite's open entries per state
and whether its gate passes now (``LedgerCollector``, a few queries per suite, at most
``MAX_SUITES`` suites).

Under gunicorn with ``flakeboard/gunicorn.py`` (``PROMETHEUS_MULTIPROC_DIR`` set), what
is counted as it happens is every worker's, added up from prometheus-client's multiprocess
files: a scrape answers the same totals whichever worker serves it.

Off (404) unless ``METRICS_TOKEN`` is set; then only ``Authorization: Bearer <METRICS_TOKEN>``
is answered (401 otherwise, compared in constant time).
"""

from __future__ import annotations

import hmac
import os

from django.conf import settings
from django.http import Http404, HttpResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

from ledger.models import Suite
from ledger.selectors import OPEN_STATES, entry_counts, gate_status_now
from web.metrics import REGISTRY

# A scrape reads a few rows per suite; beyond this many suites (by slug) it reads no more.
MAX_SUITES = 500


class LedgerCollector:
    """Each suite's ledger size and gate status, read when scraped."""

    def collect(self):
        today = timezone.now().date()
        entries = GaugeMetricFamily(
            "flakeboard_ledger_entries", "Open quarantine entries, by suite and state.",
            labels=["suite", "state"],
        )
        passing = GaugeMetricFamily(
            "flakeboard_gate_passing", "1 when the suite's gate passes now, else 0.",
            labels=["suite"],
        )
        for suite in Suite.objects.order_by("slug")[:MAX_SUITES]:
            counts = entry_counts(suite, today)
            for state in OPEN_STATES:
                entries.add_metric([suite.slug, state.value], counts[state.value])
            status = gate_status_now(suite, today, counts)
            passing.add_metric([suite.slug], int(status.passing))
        yield entries
        yield passing


REGISTRY.register(LedgerCollector())


def scraped_registry():
    """What a scrape reads: this process's registry, or with PROMETHEUS_MULTIPROC_DIR set,
    every process's counts and the ledger read now."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    registry = CollectorRegistry()
    MultiProcessCollector(registry)
    registry.register(LedgerCollector())
    return registry


def _authorized(request, token: str) -> bool:
    scheme, _, given = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode(), token.encode()
    )


@require_GET
@never_cache
def metrics(request):
    token = settings.METRICS_TOKEN
    if not token:
        raise Http404("Metrics are off: set METRICS_TOKEN.")
    if not _authorized(request, token):
        response = HttpResponse("A bearer token is required.\n", status=401,
                                content_type="text/plain; charset=utf-8")
        response["WWW-Authenticate"] = 'Bearer realm="flakeboard-metrics"'
        return response
    return HttpResponse(generate_latest(scraped_registry()), content_type=CONTENT_TYPE_LATEST)
