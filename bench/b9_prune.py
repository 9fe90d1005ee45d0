"""B9: ``manage.py prune`` at the B4 scale, on 500 days of history (1,000 reports of 1,000
measurements and 100 verdict batches of 1,000 records, spread evenly over the days, with
their per-day rollups; 10k open entries): the raw rows older than RETENTION_DAYS (400)
deleted per second, and ``GET /api/v1/suites/{suite}/ledger``'s latency while the prune
runs.

The prune runs in this process (as the command does: chunks of uploads, each its own
transaction under the suite's write lock) while a thread sends one ledger GET after
another to gunicorn (2 sync workers), each timed from request to last byte. The same GETs
are first timed with no prune running, as the baseline.
"""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path

from django.conf import settings
from django.db import connection, connections
from django.utils import timezone

from ledger.tokens import token_create
from runs.prune import prune_uploads

from . import data
from .measure import ERROR, Row, fmt_seconds, progress, scaled
from .server import Gunicorn, fetch

ID = "B9"
DAYS = 500  # of history: the oldest 100 are past the 400 days kept
ROWS_PER_UPLOAD = 1_000
RATE_LIMIT = 5_000  # rows deleted a second, at least
P95_LIMIT_MS = 150  # the ledger GET's 95th percentile while the prune runs, at most
LEAST_SAMPLES = 5
IDLE_SECONDS = 5.0


def _world(scale: float):
    today = timezone.now().date()
    suite = data.make_suite("b9")
    entries = scaled(scale, 10_000, 20)
    nodes = data.make_nodes(suite, data.nodeids(max(entries * 2, ROWS_PER_UPLOAD + 10)), today)
    progress(f"{ID}: {len(nodes):,} nodes and {entries:,} open entries")
    data.creation_events(suite, data.make_entries(suite, nodes[:entries], today, seed=9))
    reports, batches = scaled(scale, 1_000), scaled(scale, 100, 2)
    progress(f"{ID}: {reports:,} reports and {batches:,} batches of {ROWS_PER_UPLOAD:,} rows "
             f"over {DAYS} days")
    measured, verdicts = data.history(suite, [n.pk for n in nodes], today, days=DAYS,
                                      reports=reports, batches=batches, rows=ROWS_PER_UPLOAD)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    _, raw = token_create(suite=suite, scope="read", actor="bench", name="bench")
    return suite, today, raw, {"open_entries": entries, "reports": reports, "batches": batches,
                               "measurements": measured, "verdicts": verdicts, "days": DAYS}


class Sampler(threading.Thread):
    """Ledger GETs one after another until ``stop`` is set and LEAST_SAMPLES are taken; the
    seconds of each, and any answer that was not 200. ``every``: the seconds from one GET's
    start to the next's, at least (0: each at once after the last); ``phase``: the seconds
    before the first."""

    def __init__(self, url: str, headers: dict, every: float = 0.0, phase: float = 0.0):
        super().__init__(daemon=True)
        self.url, self.headers, self.every, self.phase = url, headers, every, phase
        self.stop = threading.Event()
        self.seconds: list[float] = []
        self.bad: list[int] = []

    def run(self) -> None:
        self.stop.wait(self.phase)
        while not self.stop.is_set() or len(self.seconds) < LEAST_SAMPLES:
            started = time.perf_counter()
            status, _, _ = fetch(self.url, self.headers)
            self.seconds.append(time.perf_counter() - started)
            if status != 200:
                self.bad.append(status)
            if (rest := self.every - (time.perf_counter() - started)) > 0:
                self.stop.wait(rest)


def percentile(values: list[float], share: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[round(share * 100) - 1]


def sampled(server, path: str, headers: dict, during) -> tuple[Sampler, object]:
    sampler = Sampler(server.url(path), headers)
    sampler.start()
    try:
        result = during()
    finally:
        sampler.stop.set()
        sampler.join()
    return sampler, result


def run(scale: float, backend: str, workdir: Path) -> list[Row]:
    suite, today, raw, world = _world(scale)
    path = f"/api/v1/suites/{suite.slug}/ledger"
    auth = {"Authorization": f"Bearer {raw}"}
    connections.close_all()
    idle_seconds = IDLE_SECONDS if scale >= 1 else 0.5
    with Gunicorn(workdir / f"gunicorn-{ID}.log") as server:
        server.warm_up(path)
        if (status := fetch(server.url(path), auth)[0]) != 200:
            raise RuntimeError(f"{path} answered {status}")
        progress(f"{ID}: the ledger GET for {idle_seconds:g} s, no prune running")
        idle, _ = sampled(server, path, auth, lambda: time.sleep(idle_seconds))
        progress(f"{ID}: the prune, the ledger GET beside it")

        def prune():
            started = time.perf_counter()
            pruned = prune_uploads(days=settings.RETENTION_DAYS, today=today)
            return time.perf_counter() - started, pruned

        busy, (seconds, pruned) = sampled(server, path, auth, prune)
    deleted = pruned.reports + pruned.measurements + pruned.batches + pruned.verdicts
    rate = deleted / seconds
    p50, p95 = percentile(busy.seconds, 0.5), percentile(busy.seconds, 0.95)
    idle50, idle95 = percentile(idle.seconds, 0.5), percentile(idle.seconds, 0.95)
    figures = {**world, "deleted": {"reports": pruned.reports,
                                    "measurements": pruned.measurements,
                                    "batches": pruned.batches, "verdicts": pruned.verdicts},
               "prune_s": seconds, "get_s_during": busy.seconds, "get_s_idle": idle.seconds}
    rows = [
        Row(ID, backend, "prune: rows deleted per second",
            subject=f"{rate:,.0f} rows/s", goal=f"≥ {RATE_LIMIT:,} rows/s",
            ratio=rate / RATE_LIMIT, limit=1.0, at_most=False,
            detail=f"{deleted:,} rows ({pruned.reports:,} reports, "
                   f"{pruned.measurements:,} measurements, {pruned.batches:,} batches, "
                   f"{pruned.verdicts:,} verdicts) in {fmt_seconds(seconds)}",
            figures=figures).judge(deleted > 0),
        Row(ID, backend, "GET /ledger while the prune runs (p95)",
            subject=f"p95 {fmt_seconds(p95)}, p50 {fmt_seconds(p50)}",
            baseline=f"p95 {fmt_seconds(idle95)}, p50 {fmt_seconds(idle50)} idle",
            goal=f"p95 ≤ {P95_LIMIT_MS} ms", ratio=p95 * 1000 / P95_LIMIT_MS, limit=1.0,
            detail=f"{len(busy.seconds):,} GETs one after another during the prune, "
                   f"{len(idle.seconds):,} idle; {world['open_entries']:,} open entries",
            figures=figures).judge(),
    ]
    if busy.bad or idle.bad:
        for row in rows:
            row.status, row.detail = ERROR, f"the ledger answered {busy.bad + idle.bad}"
    return rows
