"""B5: a 20k-record signal upload, ``POST /api/v1/suites/{suite}/verdicts`` over HTTP to
gunicorn (2 sync workers), timed from the first byte sent to the last byte of the answer
read.

The suite already knows its nodes, as on every day but its first; each upload is a
different patch, so none is answered as a duplicate. A second figure times the same uploads
as attempts 11 and on of one retried gate (one patch and commit), each judged with every
attempt stored before it. The workers are warmed up first (each
has loaded the views), and the serving worker's peak RSS over the uploads (VmHWM) is
reported against the body's size. One more upload of the same shape is then made in this
process, straight through the WSGI application (no HTTP), under cProfile.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.wsgi import get_wsgi_application
from django.db import connections
from django.utils import timezone

from ledger.tokens import token_create
from runs.ingest import signals_ingest

from . import data, profiling
from .measure import (
    TIMES,
    Row,
    clock,
    fmt_bytes,
    fmt_seconds,
    median,
    progress,
    repeats,
    routable,
    scaled,
    unavailable,
)
from .server import Gunicorn, fetch

ID = "B5"
RECORDS = 20_000
LIMIT_S = 2.0
WARM_UP_RECORDS = 10
# What still separates the figure from its goal, as the profile shows it.
GAP = """
The time is within its limit. In process, most of an upload is the ingest service (B1's
steps on 20,000 records); the answer's envelope goes through its schema, and its rows are
written with orjson as the ingest made them (tests/test_upload_answers.py proves they are
what the schema makes of them). The view and the middleware are the rest; over HTTP,
gunicorn reading the 4 MB body and writing the answer come on top. Memory is the goal
still missed: the serving worker's peak RSS is more than ten times the body. A
record is 150 to 220 bytes of JSON, and while it is judged it is held as its decoded dict,
its validated model, its row tuple and its answer dict, together some kilobytes of Python
objects; ten times the body would take a parser that validates and stores the records in
chunks as it reads them, and an answer streamed out in the same chunks.
"""


EARLIER_ATTEMPTS = 10  # the retried gate's attempts stored before the timed ones
RETRIED = "b5-retried"


def body_for(ids: list[str], i: int, patch: str = "") -> bytes:
    """Upload ``i``: a patch of its own, or the ``i``-th attempt at ``patch``'s commit."""
    if not patch:
        return data.signals_body(data.signal_records(ids, i + 1), f"b5-patch-{i}")
    return data.signals_body(data.signal_records(ids, i + 1), patch, evidence=f"ci/{i}")


def answered(path: str, got: tuple[int, dict, bytes], count: int) -> None:
    """Raise unless the upload was taken and its answer lists every record."""
    status, _, answer = got
    if status not in (200, 201):
        raise RuntimeError(f"{path} answered {status}: {answer[:500]!r}")
    records = json.loads(answer).get("records", [])
    if len(records) != count:
        raise RuntimeError(f"the answer holds {len(records)} records, not {count}")


def profiled_upload(path: str, ids: list[str], i: int, headers: dict) -> dict:
    """Upload ``i`` in this process, through the WSGI application, under cProfile; after
    a small upload that warms this process up as the gunicorn workers are (URLs, schemas)."""
    app = get_wsgi_application()
    few = ids[:WARM_UP_RECORDS]
    warm_up = data.signals_body(data.signal_records(few, 0), "b5-warm-up")
    answered(path, profiling.wsgi_call(app, "POST", path, headers, warm_up), len(few))
    body, got = body_for(ids, i), {}

    def upload():
        got["answer"] = profiling.wsgi_call(app, "POST", path, headers, body)

    found = profiling.profile(upload)
    answered(path, got["answer"], len(ids))
    return found


def run(scale: float, backend: str, workdir: Path) -> list[Row]:
    count = scaled(scale, RECORDS, 20)
    what = f"POST /verdicts, {count:,} records, over HTTP"
    path = "/api/v1/suites/b5/verdicts"
    if not routable(path):
        return [unavailable(ID, backend, what, "POST /api/v1/suites/{suite}/verdicts")]
    today = timezone.now().date()
    suite = data.make_suite("b5")
    ids = data.nodeids(count)
    data.make_nodes(suite, ids, today)
    data.make_entries(suite, list(suite.nodes.order_by("pk")[::50]), today, seed=5)
    _, raw = token_create(suite=suite, scope="write", actor="bench", name="bench")
    rounds = repeats(scale, 3)
    bodies = [body_for(ids, i) for i in range(rounds)]
    retries = [body_for(ids, EARLIER_ATTEMPTS + i, RETRIED) for i in range(rounds)]
    headers = {"Authorization": f"Bearer {raw}", "Content-Type": "application/json"}
    progress(f"{ID}: {EARLIER_ATTEMPTS} attempts of a retried gate, stored in this process")
    for i in range(EARLIER_ATTEMPTS):
        signals_ingest(suite=suite, body=body_for(ids, i, RETRIED), actor="bench")
    connections.close_all()

    times, retried = [], []
    with Gunicorn(workdir / f"gunicorn-{ID}.log") as server:
        server.warm_up(path)  # every worker has loaded the views: the uploads pay no imports
        server.reset_peaks()
        before = server.worker_memory()
        progress(f"{ID}: {rounds} uploads of {count:,} records")
        for body in bodies:
            seconds, got = clock(
                lambda body=body: fetch(server.url(path), headers, body, method="POST")
            )
            answered(path, got, count)
            times.append(seconds)
        after = server.worker_memory()
        progress(f"{ID}: {rounds} more attempts of the retried gate, each judged with the "
                 f"{EARLIER_ATTEMPTS} or more before it")
        for body in retries:
            seconds, got = clock(
                lambda body=body: fetch(server.url(path), headers, body, method="POST")
            )
            answered(path, got, count)
            retried.append(seconds)
    progress(f"{ID}: one more upload in process, under cProfile")
    profile = profiled_upload(path, ids, rounds, headers)
    # The worker that grew most served at least one upload: its peak (VmHWM) over them all.
    grown = {pid: after[pid]["peak"] - before[pid]["rss"] for pid in after if pid in before}
    serving = max(grown, key=grown.get) if grown else None
    peak = after[serving]["peak"] if serving else None
    body_bytes = len(bodies[0])
    memory = (f"; the serving worker's peak RSS {fmt_bytes(peak)} = "
              f"{peak / body_bytes:.1f}{TIMES} the body (goal ≤ 10{TIMES}), "
              f"{fmt_bytes(grown[serving])} over its {fmt_bytes(before[serving]['rss'])} "
              f"before the uploads" if peak else "")
    seconds, retry_seconds = median(times), median(retried)
    retry_row = Row(
        ID, backend, f"{what}, attempt {EARLIER_ATTEMPTS + 1}+ at one patch and commit",
        subject=fmt_seconds(retry_seconds), goal=f"≤ {LIMIT_S:g} s",
        ratio=retry_seconds / LIMIT_S, limit=1.0,
        detail=f"judged with the {EARLIER_ATTEMPTS} or more attempts stored before it "
               f"(SPEC 2.4a); {retry_seconds / seconds:.2f}{TIMES} a first attempt's time",
        figures={"records": count, "seconds": retried, "earlier_attempts": EARLIER_ATTEMPTS},
    ).judge()
    return [Row(
        ID, backend, what, subject=fmt_seconds(seconds), goal=f"≤ {LIMIT_S:g} s",
        ratio=seconds / LIMIT_S, limit=1.0,
        detail=f"{body_bytes:,}-byte body; {count / seconds:,.0f} records/s end to end"
               f"{memory}",
        figures={"records": count, "seconds": times, "body_bytes": body_bytes,
                 "peak_rss_bytes": peak,
                 "rss_before_bytes": before[serving]["rss"] if serving else None,
                 "peak_rss_increase_bytes": grown[serving] if serving else None,
                 "peak_rss_over_body": peak / body_bytes if peak else None,
                 "workers_memory": {"before": list(before.values()),
                                    "after": list(after.values())}, "profile": profile},
    ).judge(), retry_row]
