"""B8: the largest uploads the limits admit, over HTTP to gunicorn run as docs/deployment.md deploys
it (``--workers 4``, gunicorn's default 30 s worker timeout): a verdict batch and a flake
report of minimal records (verdicts: node, property_check, fixture_lock, flake_status;
reports: nodeid, n, fails), each holding as many rows as both ``UPLOAD_MAX_RECORDS`` and
``UPLOAD_MAX_BYTES`` admit.

Each goes to a suite that has never seen its nodes (the worst case: every node is new),
then again as the next day's upload of the same nodes (a new patch or commit, so not a
duplicate; the nodes' last-seen dates are moved back a day before it, so it also moves
every node's), then once more as the 11th attempt at one commit (and patch), judged with
the 10 attempts stored before it (SPEC 2.4a: merged records, pooled measurements).
Must: each lands (201) within the worker timeout, timed from the first byte sent to the
last byte of the answer read. Each kind goes to a gunicorn started for it,
its workers warmed up first; the serving worker's peak RSS during the upload (VmHWM, reset
before it) is reported against the body's size (goal: at most 10 times).
"""

from __future__ import annotations

import json
import os
import random
import threading
import zlib
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import connections
from django.utils import timezone

from ledger.models import Node
from ledger.tokens import token_create
from runs.ingest import report_ingest, signals_ingest

from . import data
from .measure import TIMES, Row, clock, fmt_bytes, fmt_seconds, progress, routable, unavailable
from .server import Gunicorn, fetch

ID = "B8"
WORKERS = 4  # docs/deployment.md's gunicorn command
TIMEOUT_S = 30  # gunicorn's default worker timeout, which docs/deployment.md keeps
RSS_LIMIT = 10.0  # peak RSS of the serving worker ÷ the body's size (a goal)


def verdict_records(nodes: list[str]) -> list[dict]:
    r = random.Random(data.SEED + 8)
    return [{
        "node": node,
        "property_check": r.choices(("pass", "fail", "not_run"), (0.95, 0.02, 0.03))[0],
        "fixture_lock": "match",
        "flake_status": "frozen" if r.random() < 0.02 else "stable",
    } for node in nodes]


def report_rows(nodes: list[str]) -> list[dict]:
    r = random.Random(data.SEED + 9)
    return [{"nodeid": node, "n": 200, "fails": 0 if r.random() < 0.9 else r.randint(1, 6)}
            for node in nodes]


KINDS = {
    # kind: (endpoint, rows key, row maker, metadata of the two uploads, ingest service)
    "verdicts": ("verdicts", "records", verdict_records,
                 [{"patch": "b8-patch-1"}, {"patch": "b8-patch-2"}], signals_ingest),
    "report": ("reports", "measurements", report_rows, [{"branch": "main"}] * 2,
               report_ingest),
}
# A retried gate: the third upload of each kind is the 11th at its commit (and patch), so
# it is judged with the 10 stored before it (SPEC 2.4a).
EARLIER_ATTEMPTS = 10


def envelope(rows_key: str, rows: list[dict], meta: dict, tag: str) -> dict:
    return {**meta, "commit": f"{zlib.crc32(tag.encode()):010x}", rows_key: rows}


def largest(rows_key: str, rows: list[dict], meta: dict, max_bytes: int) -> tuple[int, bool]:
    """How many rows like ``rows`` (from the first) one body holds within ``max_bytes``,
    and whether that is exact (else extrapolated from the mean size of all of ``rows``)."""
    size = len(json.dumps(envelope(rows_key, [], meta, "x")).encode())
    base = size
    for count, row in enumerate(rows):
        size += len(json.dumps(row).encode()) + (2 if count else 0)  # ", " between rows
        if size > max_bytes:
            return count, True
    return int(len(rows) * (max_bytes - base) / (size - base)), False


def cpu_seconds(pid: int) -> float | None:
    """A process's CPU time so far (user + system), from /proc/<pid>/stat."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def post(server: Gunicorn, path: str, headers: dict, body: bytes) -> dict:
    """One upload: its time, status, answer and the serving worker's memory."""
    server.reset_peaks()
    before = server.worker_memory()
    after = {pid: dict(memory) for pid, memory in before.items()}
    cpu = {pid: cpu_seconds(pid) for pid in before}
    done = threading.Event()

    def sample():
        for pid, memory in server.worker_memory().items():
            if pid in after:
                after[pid]["peak"] = max(after[pid]["peak"], memory["peak"])
                after[pid]["rss"] = memory["rss"]
                after[pid]["cpu_s"] = cpu_seconds(pid)

    def watch():  # also while it runs: a worker killed at the timeout takes its figures along
        while not done.wait(0.5):
            sample()

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        seconds, (status, _, answer) = clock(
            lambda: fetch(server.url(path), headers, body, method="POST"))
    except OSError as exc:  # the worker was killed (timeout) before it answered
        seconds, status, answer = None, 0, repr(exc).encode()
    finally:
        done.set()
        watcher.join()
    sample()
    grown = {pid: after[pid]["peak"] - before[pid]["rss"] for pid in after}
    serving = max(grown, key=grown.get) if grown else None
    return {
        "seconds": seconds, "status": status, "answer": answer,
        "peak_rss": after[serving]["peak"] if serving else None,
        "rss_before": before[serving]["rss"] if serving else None,
        "cpu_s": after[serving]["cpu_s"] - cpu[serving]
        if serving and after[serving].get("cpu_s") and cpu.get(serving) else None,
        "workers": {"before": list(before.values()), "after": list(after.values())},
    }


def run(scale: float, backend: str, workdir: Path) -> list[Row]:
    max_records, max_bytes = settings.UPLOAD_MAX_RECORDS, settings.UPLOAD_MAX_BYTES
    rows_out = []
    for kind, (endpoint, rows_key, make, metas, ingest) in KINDS.items():
        slug = f"b8-{kind}"
        path = f"/api/v1/suites/{slug}/{endpoint}"
        if not routable(path):
            rows_out.append(unavailable(ID, backend, f"the largest {kind} upload",
                                        f"POST /api/v1/suites/{{suite}}/{endpoint}"))
            continue
        suite = data.make_suite(slug)
        _, raw = token_create(suite=suite, scope="write", actor="bench", name="bench")
        headers = {"Authorization": f"Bearer {raw}", "Content-Type": "application/json"}
        rows = make(data.nodeids(max_records, prefix=f"tests_{kind}"))
        fit, exact = largest(rows_key, rows, metas[0], max_bytes)
        count = max(1, round(min(max_records, fit) * min(scale, 1)))
        binds = (f"UPLOAD_MAX_BYTES binds (over UPLOAD_MAX_RECORDS' {max_records:,})" if exact
                 else f"UPLOAD_MAX_RECORDS binds (the bytes would hold about {fit:,})")
        rows = rows[:count]
        bodies = [json.dumps(envelope(rows_key, rows, meta, f"{slug}-{i}")).encode()
                  for i, meta in enumerate(metas)]
        # The retried gate's attempts: the same rows at one commit, each its own CI run.
        attempts = [json.dumps(envelope(rows_key, rows, {**metas[1], "evidence": f"ci/{k}"},
                                        f"{slug}-retried")).encode()
                    for k in range(EARLIER_ATTEMPTS + 1)]
        bodies.append(attempts.pop())
        assert all(len(body) <= max_bytes for body in bodies)
        del rows
        connections.close_all()
        labels = ("every node new", "the next day, same nodes",
                  f"attempt {EARLIER_ATTEMPTS + 1} at one commit")
        with Gunicorn(workdir / f"gunicorn-{ID}.log", workers=WORKERS,
                      timeout=TIMEOUT_S) as server:
            server.warm_up(path)
            for i, (body, label) in enumerate(zip(bodies, labels, strict=True)):
                if i == 1:
                    yesterday = timezone.now().date() - timedelta(days=1)
                    Node.objects.filter(suite=suite).update(last_seen=yesterday)
                    connections.close_all()
                if i == 2:
                    progress(f"{ID}: {kind}, {EARLIER_ATTEMPTS} earlier attempts at one "
                             f"commit, stored in this process")
                    for earlier in attempts:
                        ingest(suite=suite, body=earlier, actor="bench")
                    connections.close_all()
                progress(f"{ID}: {kind}, {count:,} records ({len(body):,} bytes), {label}")
                got = post(server, path, headers, body)
                rows_out.append(judged(backend, kind, label, count, body, got, rows_key,
                                       binds, {"upload_max_records": max_records,
                                               "upload_max_bytes": max_bytes,
                                               "records_the_bytes_hold": fit}))
    return rows_out


def judged(backend, kind, label, count, body, got, rows_key, binds, limits) -> Row:
    status, seconds = got["status"], got["seconds"]
    answered = []
    if status == 201:
        answered = json.loads(got["answer"]).get(rows_key, [])
    landed = status == 201 and len(answered) == count
    peak, before = got["peak_rss"], got["rss_before"]
    rss_ratio = peak / len(body) if peak else None
    cpu = f", the worker's CPU {got['cpu_s']:.1f} s" if got["cpu_s"] is not None else ""
    if landed:
        outcome = (f"201 in {fmt_seconds(seconds)} ({count / seconds:,.0f} records/s{cpu}), "
                   f"{TIMEOUT_S - seconds:.1f} s left of the worker timeout")
    else:
        outcome = (f"did not land: status {status or 'none (worker killed?)'}, "
                   f"{got['answer'][:300]!r}")
    memory = (f"serving worker's peak RSS {fmt_bytes(peak)} = {rss_ratio:.1f}{TIMES} the body "
              f"(goal ≤ {RSS_LIMIT:g}{TIMES}; {fmt_bytes(peak - before)} over its "
              f"{fmt_bytes(before)} before the upload)" if peak else "peak RSS unknown")
    row = Row(
        ID, backend, f"largest {kind} upload, {count:,} records, {label}",
        subject=fmt_seconds(seconds) if seconds is not None else "no answer",
        goal=f"201 within {TIMEOUT_S} s", ratio=(seconds or TIMEOUT_S * 2) / TIMEOUT_S,
        limit=1.0,
        detail=f"{len(body):,}-byte body ({fmt_bytes(len(body))}; {binds}); {outcome}; "
               f"{memory}",
        figures={"records": count, "body_bytes": len(body), "status": status,
                 "seconds": seconds, "worker_cpu_s": got["cpu_s"], "peak_rss_bytes": peak,
                 "rss_before_bytes": before,
                 "peak_rss_over_body": rss_ratio,
                 "peak_rss_increase_bytes": peak - before if peak else None,
                 "workers_memory": got["workers"], "worker_timeout_s": TIMEOUT_S, **limits},
    )
    return row.judge(landed)
