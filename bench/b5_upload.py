"""B5: a 20k-record signal upload, ``POST /api/v1/suites/{suite}/verdicts`` over HTTP to
gunicorn (2 sync workers), timed from the first byte sent to the last byte of the answer
read.

The suite already knows its nodes, as on every day but its first; each upload is a
different patch, so none is answered as a duplicate.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.db import connections
from django.utils import timezone

from ledger.tokens import token_create

from . import data
from .measure import (
    Row,
    clock,
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
    bodies = [data.signals_body(data.signal_records(ids, i + 1), f"b5-patch-{i}")
              for i in range(rounds)]
    headers = {"Authorization": f"Bearer {raw}", "Content-Type": "application/json"}
    connections.close_all()

    times = []
    with Gunicorn(workdir / f"gunicorn-{ID}.log") as server:
        progress(f"{ID}: {rounds} uploads of {count:,} records")
        for body in bodies:
            seconds, (status, _, answer) = clock(
                lambda body=body: fetch(server.url(path), headers, body, method="POST")
            )
            if status not in (200, 201):
                raise RuntimeError(f"{path} answered {status}: {answer[:500]!r}")
            records = json.loads(answer).get("records", [])
            if len(records) != count:
                raise RuntimeError(f"the answer holds {len(records)} records, not {count}")
            times.append(seconds)
    seconds = median(times)
    return [Row(
        ID, backend, what, subject=fmt_seconds(seconds), goal=f"≤ {LIMIT_S:g} s",
        ratio=seconds / LIMIT_S, limit=1.0,
        detail=f"{len(bodies[0]):,}-byte body; {count / seconds:,.0f} records/s end to end",
        figures={"records": count, "seconds": times, "body_bytes": len(bodies[0])},
    ).judge()]
