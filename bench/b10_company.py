"""B10: the board as a company runs it (PostgreSQL only): one database holding 20 suites,
the largest with 50,000 tests (the others 20,000 down to 5,000), its uploads served by
gunicorn with 4 sync workers and its reads by a gunicorn of their own (2 workers of 4
threads, as docs/deployment.md has it), under sustained JUnit ingest.

The history is written with COPY, as the ingest would have left it: 30 days of JUnit
rollups (``NodeDay`` for every test that ran, ``SignatureDay`` for its failures) for every
suite, each test run ``RUNS_PER_DAY`` times a day (10 commits, each in B7's two jobs), and for
the largest suite the raw rows of its last 7 days (``JUnitFile`` and ``CaseResult``: one
file per shard of 5,000 tests per run, so 200 files and 1M testcases a day), newest day
first, the day's files in one pass, until the 7 days are written, the setup has run
``SETUP_BUDGET_S`` (the next day would not fit) or the database's disk has under 20 GiB
free; the row counts, the time and the database's size are printed. 4% of
each suite's tests are flaky, 2% skipped (B7's ``Tests``); one in two flaky tests of the
largest suite holds a quarantine entry.

Before the load, each of those four pages is timed alone on the reads' workers (its median
idle, beside its median during the ingest: the page's work told apart from the contention);
the pages read the summary of each test's last 30 days (``junit.summary``), built with the
history. Then, through gunicorn: 8 uploaders (threads) POST 5,000-testcase pytest files
(``POST /api/v1/suites/{suite}/junit``, a write token of the suite) for 2 minutes, each
taking the next CI job of the company's round: every suite's shards in both jobs, one new
commit per suite and round, each suite's files spread evenly over the round, so each suite
gets uploads in proportion to its tests. Judged: the testcases stored per second (goal ≥
20,000, issue 53's; four times the issue's company peak) and the uploads' p95 latency
(≤ 2 s), with the CPU
per 1,000 testcases of gunicorn's workers and of the PostgreSQL backends serving them (read
from /proc every half second). Meanwhile, each in a thread of its own, through the reads'
gunicorn: the ledger (``GET /api/v1/suites/{suite}/ledger``, a read token; p95 ≤ 50 ms) ten
times a second, and once a second each the flaky-tests page, the targets file, a flaky
test's node page and the overview of the largest suite (signed in as a staff user; median ≤
150 ms, each page's queries ≤ 12, counted in this process before the load), each page a
quarter of a second after the one before, as readers who do not click in step; a GET
slower than its interval is followed at once by the next. The ledger is also read ten times a
second through the uploads' workers, to show what sharing them costs. After the load, one
more file of the largest suite is ingested in this process under cProfile.

Then the prune of the oldest raw day of the largest suite (``prune_junit``, as
``manage.py prune_junit`` runs it) with a ledger GET after another beside it: the rows
deleted a second (B9's goal, ≥ 5,000) and the ledger's p95 meanwhile (≤ 50 ms). Last, the
database's bytes per million testcases (tables with their indexes and TOAST, as
``pg_total_relation_size`` counts them): raw (files and results) per testcase
result stored, and rolled up (``NodeDay``, ``SignatureDay``) per testcase they count, each
against the bytes of the pytest XML those testcases came in (the issue sets no goal for
them: the row's goal is no more than the XML itself). On SQLite the run makes one row,
saying it was not run there.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from django.conf import settings
from django.db import connection, connections
from django.utils import timezone

from junit.prune import prune_junit
from ledger.tokens import token_create

from .b9_prune import RATE_LIMIT as PRUNE_RATE_LIMIT
from .b9_prune import Sampler, percentile, sampled
from .b10_load import (
    SHARED,
    UPLOADERS,
    count_queries,
    ingest_under_load,
    largest_pages,
    profiled_ingest,
    write_bodies,
)
from .b10_world import (
    ID,
    RAW,
    ROLLUP_DAYS,
    RUNS_PER_DAY,
    database_sizes,
    make_world,
    shard_counts,
)
from .measure import ERROR, TIMES, UNAVAILABLE, Row, fmt_bytes, fmt_seconds, progress
from .pages import MS_LIMIT, QUERY_LIMIT
from .server import Gunicorn, fetch

WORKERS = 4  # docs/deployment.md's gunicorn command
READ_WORKERS, READ_THREADS = 2, 4  # the reads' own gunicorn (docs/deployment.md)
INGEST_S = 120.0
RATE_GOAL = 20_000  # testcases stored a second, at least
UPLOAD_P95_S = 2.0
LEDGER_P95_MS = 50
COMPANY_DAY = 50_000_000  # the company: testcases a day

GAP = """
Measured on an idle machine (2026-12-07 09:57 and 10:03 UTC, twice, the second begun at a
1-minute load of 3.4 left by the first). The ingest stores 27,400 to 27,900 testcases a
second by keeping 1.75 of the 2 CPUs busy: per 1,000 testcases 31 ms of gunicorn's CPU and
31 ms of PostgreSQL's. The same machine that morning, before the raw rows lost their ids
(junit 0011): 18,957 a second, 38 and 51 ms; after them, before ``NodeDay`` kept room on its
pages (junit 0012): 21,504, 34 and 45 ms. Two CPUs top out near 32,000 a second. Since the
job counts went (junit 0013), run at 12:01 and 12:15 UTC (begun at 1-minute loads of 0.7 and
1.2): 26,647 and 24,319 a second, at 32 and 34 ms of gunicorn's CPU and 32 and 36 ms of
PostgreSQL's; the commit before it, run at 12:20 on the same machine (begun at 2.9): 21,703,
35 and 42 ms. An upload no longer writes a count a test; it reads instead the results of its
commit's earlier files (its own job's, for its own tests, and the tests the other jobs
failed). The profile of one 5,000-test file (0.34 s under cProfile, in the bench's own
process, after the load) is half waiting on PostgreSQL (0.16 s, most of it on the day's
rollups and the summary); reading the file takes 0.09 s and finding its nodes 0.07 s. With
the results narrower (junit 0014), run at 14:32 and 14:47 UTC (begun at 0.6 and 0.8):
27,575 and 25,892 a second, at 34 and 36 ms of gunicorn's CPU and 29 and 31 ms of
PostgreSQL's. With the rollups' keys and the summary's move in the database (junit 0015,
0016, 0017 and the upload's own trims), run at 18:17 and 18:27 UTC (begun at 0.9 and 0.8):
34,865 and 35,046 a second, at 30 and 29 ms of gunicorn's CPU and 21 ms of PostgreSQL's.

The upload latency is queueing, not slow queries. 8 uploaders on 4 sync workers keep every
worker busy and four uploads waiting, so an upload's p95 (1.94 s that morning; 2.13 and 2.26
s after junit 0013, 2.53 s before it at 12:20; 1.97 and 2.26 s after junit 0014; 1.48 and
1.60 s after 0017) is mostly its wait, as Little's law has it (8 uploads in flight at 7 a
second: 1.1 s). It met its goal in both runs since 0017, with the throughput a third
higher; more room comes from more CPUs for the uploads' workers (another host behind the
same balancer), or fewer uploads in flight per worker.
Reads sent to the uploads' workers wait in the same queue (the ledger's p95 there: 1.2 s);
served by a gunicorn of their own (docs/deployment.md), the ledger's p95 is 21 to 31 ms
during the ingest.

The four pages meet 150 ms idle (medians 18 to 97 ms, within their 12 queries). During the
ingest the targets file and the node page now meet it too (137 and 147 ms, 100 and 110 ms,
after 0017), and the flaky-tests page and the overview miss it (224 and 257 ms, 192 and 190
ms; before, 200 to 438 ms) because the ingest keeps the two CPUs busy: the difference is
contention, not their work. Their remedy is CPUs of their
own: the reads' gunicorn on another host and their queries on a replica
(``READ_DATABASE_URL``), which this single machine cannot show. Less work per page helps in
proportion only: each is slowed three to eight times by the contention. The diagnoses the
flaky-tests page and the targets file show read each test's flaky failures per job from its
results (a column of the flaky failures each file added), one sum, not a pass a commit: read
a pass a commit, the first try took those two pages from 66 and 35 ms to 970 and 739 ms
idle.

That evening (2026-12-07, 21:00 to 22:00 UTC) the machine ran at about half its earlier
speed with nothing else running (``sum(range(10**6))`` 33 to 37 ms, 18 ms an hour before;
the ingest 14,807 to 22,552 testcases a second), so its runs are compared by ratios and by
the work the pages do, not by their times against the afternoon's. Three findings:

- the four page readers were started together and stayed in step, so each second the
  four pages were asked for at once and waited on each other in the reads' two processes:
  with no upload running, the node page's median was 107 to 116 ms read so, 43 to 45 ms
  with the readers a quarter of a second apart (the flaky-tests page 174 to 197 ms, 115 to
  135). Each now reads at its own quarter of the second. During the ingest the node page's
  median went from 6.4 times its idle one to 3.8 and 4.0 times (141 and 146 ms, met);
- the overview's share counted the known nodes as one "seen or holding an entry" over
  every node of the suite: PostgreSQL read each node's row (15 to 20 ms), and the
  estimate of that plan passed ``jit_above_cost``, so it also compiled it (25 ms). Counted
  in two parts that do not overlap, the seen nodes by their index alone and the unseen ones
  an entry holds, and the live entries' tiers read a node at a time (the join had walked
  the node table's key from its start), the overview took 50 to 70 ms idle, 90 to 118
  before, in runs back to back on the same data. Every upload reads the same share;
- the flaky-tests page drew each test's 30 sparkline days in a template loop, each number
  localized: now one string a test. Its request makes 151,366 Python calls, 219,511 before
  (its template 86,500, 154,900); the targets file sorts the flaky tests before reading
  their node ids (200 nodes read, not 2,000: its ranking's query 10 to 5 ms).

B10's own idle medians, scaled by the CPU its ingest took per 1,000 testcases (76 ms at the
commit before, 106 ms in the last run, the same code: the machine's speed), went for the
overview from 79 to 55 ms and for the flaky-tests page from 91 to 85; the targets file and
the node page did not change (37 and 35 ms, 25 and 26). The flaky-tests page is still the
slowest (its template about 25 ms and its diagnoses'
read of each listed test's results by job about 11 ms, idle), and all four are still
slowed three to four times by an ingest that keeps both CPUs busy: the remedy stays CPUs of
their own.

The prune drops a day of the largest suite (1M results) in under 0.2 s (before junit 0013,
deleting the day's job counts row by row took 20 s) and the ledger does not notice (p95
under 5 ms). The raw rows take 0.92 times the XML they came from (1.39 before junit 0014,
2.23 before 0013, 2.97 before 0011): a result (``CaseResult``) about 97 bytes, its row 72 (a
24-byte header and 47 bytes of values, padded to a multiple of 8), its pointer 4 and its two
index entries about 21 together, a node's days and its file, whose repeated keys a B-tree's
deduplication stores once (the key (file, position, day), which took 32 bytes a row, is no
index on PostgreSQL since 0014); the files are under 0.1%. The row is as narrow as it goes
without changing what it holds: the outcome in 1 byte instead of its name would only fill
the same padding. A file's results stored in one row, their values in arrays, would take a
few bytes a testcase, should a later goal ask for it. The rollups take 15.2 MiB per million
testcases (12.9 before junit 0017 left half of NodeDay's pages free for their updates): a
NodeDay row of about 325 bytes per test and day, however often it ran.
"""


def not_on_sqlite(backend: str) -> list[Row]:
    return [Row(ID, backend, "the company run: 20 suites, 8 uploaders, 4 workers",
                status=UNAVAILABLE,
                detail="PostgreSQL only (COPY, one server behind many workers): not run on "
                       "SQLite")]



def p95_text(seconds: list[float]) -> str:
    return (f"p95 {fmt_seconds(percentile(seconds, 0.95))}, "
            f"p50 {fmt_seconds(percentile(seconds, 0.5))}")


def run(scale: float, backend: str, workdir: Path) -> list[Row]:
    if connection.vendor != "postgresql":
        return not_on_sqlite(backend)
    today = timezone.now().date()
    companies, made = make_world(scale, today)
    sizes = database_sizes(made)
    largest = companies[0]
    _, read = token_create(suite=largest.suite, scope="read", actor="bench", name="bench")
    progress(f"{ID}: two files of every shard ({shard_counts(scale)[0]:,} testcases each)")
    xml_per_testcase = write_bodies(companies)
    pages = largest_pages(largest, read)
    queries, cookie = count_queries(pages)
    pages = {name: (path, headers or {"Cookie": cookie}) for name, (path, headers) in
             pages.items()}
    ledger = (f"/api/v1/suites/{largest.suite.slug}/ledger", {"Authorization": f"Bearer {read}"})
    seconds = INGEST_S * min(1.0, max(scale, 4.0 / INGEST_S))
    connections.close_all()
    with (Gunicorn(workdir / f"gunicorn-{ID}.log", workers=WORKERS) as server,
          Gunicorn(workdir / f"gunicorn-{ID}-reads.log", workers=READ_WORKERS,
                   threads=READ_THREADS) as reads):
        server.warm_up(ledger[0])
        reads.warm_up(ledger[0])
        if (status := fetch(server.url(ledger[0]), ledger[1])[0]) != 200:
            raise RuntimeError(f"{ledger[0]} answered {status}")
        idle, _ = sampled(server, *ledger, lambda: time.sleep(2.0 if scale >= 1 else 0.5))
        progress(f"{ID}: the pages one after another, no upload running")
        pages_idle = {name: sampled(reads, path, headers,
                                    lambda: time.sleep(2.0 if scale >= 1 else 0.5))[0]
                      for name, (path, headers) in pages.items()}
        progress(f"{ID}: {UPLOADERS} uploaders for {seconds:.0f} s; the ledger, the pages and "
                 "the targets file read beside them")
        load = ingest_under_load(server, reads, companies, pages, ledger, seconds)
        progress(f"{ID}: {len(load['uploads']):,} uploads in {load['wall']:.1f} s; one more "
                 "in this process, under cProfile")
        profile = profiled_ingest(largest, today)
        connections.close_all()
        kept = made["raw_days"] - 1
        progress(f"{ID}: the prune of the oldest raw day (JUNIT_RETENTION_DAYS={kept}), the "
                 "ledger read beside it")

        def prune():
            started = time.perf_counter()
            pruned = prune_junit(days=kept, today=today)
            return time.perf_counter() - started, pruned

        pruning, (prune_s, pruned) = sampled(server, *ledger, prune)
    world = {**made, "bytes": sizes, "xml_bytes_per_testcase": round(xml_per_testcase, 1)}
    rows = [
        *_ingest_rows(backend, load, profile, world),
        *_page_rows(backend, load["samplers"], queries, world),
        *_idle_page_rows(backend, pages_idle, load["samplers"]),
        *_prune_rows(backend, prune_s, pruned, pruning, idle, world),
        *_size_rows(backend, sizes, made, xml_per_testcase),
    ]
    bad = {name: sampler.bad for name, sampler in
           {**load["samplers"], **{f"{page} (idle)": s for page, s in pages_idle.items()},
            "ledger (prune)": pruning, "ledger (idle)": idle}.items()
           if sampler.bad}
    refused = {status: n for status, n in load["answers"].items() if status != 201}
    if bad or refused:
        for row in rows:
            row.status, row.detail = ERROR, f"bad answers: uploads {refused}, reads {bad}"
    return rows


def _latency_row(backend: str, what: str, seconds: list[float], limit_s: float, *,
                 detail: str, figures: dict, baseline: str = "") -> Row:
    """A row judged on the 95th percentile of ``seconds`` against ``limit_s``."""
    p95 = percentile(seconds, 0.95)
    return Row(ID, backend, what, subject=p95_text(seconds), baseline=baseline,
               goal=f"p95 ≤ {fmt_seconds(limit_s)}", ratio=p95 / limit_s, limit=1.0,
               detail=detail, figures=figures).judge()


def _rate_row(backend: str, what: str, count: int, seconds: float, unit: str, least: int, *,
              detail: str, figures: dict) -> Row:
    """A row judged on ``count`` things done in ``seconds``, at least ``least`` a second."""
    rate = count / seconds
    return Row(ID, backend, what, subject=f"{rate:,.0f} {unit}/s", goal=f"≥ {least:,} {unit}/s",
               ratio=rate / least, limit=1.0, at_most=False, detail=detail,
               figures=figures).judge(count > 0)


def _ingest_rows(backend: str, load: dict, profile: dict, world: dict) -> list[Row]:
    uploads, wall, cpu = load["uploads"], load["wall"], load["cpu"]
    testcases = sum(upload.testcases for upload in uploads)
    latencies = [upload.seconds for upload in uploads]
    per_k = {name: seconds / testcases * 1000 for name, seconds in cpu.items()}
    busy = (cpu["gunicorn"] + cpu["postgresql"]) / wall
    size = max(upload.testcases for upload in uploads)
    what = f"{UPLOADERS} uploaders of {size:,}-testcase JUnit files, {WORKERS} workers"
    figures = {**world, "uploads": len(uploads), "testcases": testcases, "wall_s": wall,
               "upload_s": latencies, "cpu_s": cpu, "cpu_s_per_1000": per_k}
    return [
        _rate_row(backend, f"{what}: testcases stored a second", testcases, wall, "testcases",
                  RATE_GOAL, figures={**figures, "profile": profile},
                  detail=f"{len(uploads):,} uploads, {testcases:,} testcases in {wall:.1f} s; "
                         f"CPU per 1,000 testcases: gunicorn {per_k['gunicorn'] * 1000:.0f} "
                         f"ms, PostgreSQL {per_k['postgresql'] * 1000:.0f} ms; the two kept "
                         f"{busy:.2f} of this machine's {os.cpu_count()} CPUs busy, the "
                         f"uploaders and readers (this process) {cpu['client'] / wall:.2f}"),
        _latency_row(backend, f"{what}: upload latency (p95)", latencies, UPLOAD_P95_S,
                     detail=f"each upload from its first byte sent to its answer's last, "
                            f"queueing for a worker included; slowest "
                            f"{fmt_seconds(max(latencies))}", figures=figures),
    ]


def _page_rows(backend: str, samplers: dict, queries: dict, world: dict) -> list[Row]:
    rows = []
    for name, where in (("ledger", f"on the reads' {READ_WORKERS}{TIMES}{READ_THREADS} threads"),
                        (SHARED, f"through the uploads' {WORKERS} workers")):
        ledger = samplers[name].seconds
        rows.append(_latency_row(
            backend, f"GET /ledger during the ingest, {where} (p95)", ledger,
            LEDGER_P95_MS / 1000, figures={"seconds": ledger},
            detail=f"{len(ledger):,} GETs one after another, "
                   f"{world['largest']:,} tests in the suite"))
    for name, count in queries.items():
        seconds = samplers[name].seconds
        mid = percentile(seconds, 0.5)
        rows.append(Row(
            ID, backend, f"{name} during the ingest, on the reads' workers",
            subject=f"{fmt_seconds(mid)}, {count} queries",
            goal=f"≤ {MS_LIMIT} ms, ≤ {QUERY_LIMIT} queries", ratio=mid * 1000 / MS_LIMIT,
            limit=1.0,
            detail=f"median over {len(seconds):,} GETs one after another over HTTP "
                   f"({p95_text(seconds)}); query ratio {count / QUERY_LIMIT:.2f}, counted "
                   "in process",
            figures={"seconds": seconds, "queries": count}).judge(count <= QUERY_LIMIT))
    return rows


def _idle_page_rows(backend: str, idle: dict, during: dict) -> list[Row]:
    """Each page's median with no upload running, beside its median during the ingest: the
    page's own work, told apart from the contention."""
    rows = []
    for name, sampler in idle.items():
        mid, loaded = percentile(sampler.seconds, 0.5), percentile(during[name].seconds, 0.5)
        rows.append(Row(
            ID, backend, f"{name} idle, before the ingest, on the reads' workers",
            subject=fmt_seconds(mid), baseline=f"{fmt_seconds(loaded)} during the ingest",
            goal=f"≤ {MS_LIMIT} ms", ratio=mid * 1000 / MS_LIMIT, limit=1.0,
            detail=f"median over {len(sampler.seconds):,} GETs one after another "
                   f"({p95_text(sampler.seconds)}); the rest of its time during the ingest "
                   "is contention",
            figures={"seconds": sampler.seconds}).judge())
    return rows


def _prune_rows(backend: str, seconds: float, pruned, pruning: Sampler, idle: Sampler,
                world: dict) -> list[Row]:
    deleted = pruned.results
    figures = {"prune_s": seconds, "deleted": {"results": pruned.results},
               "get_s_during": pruning.seconds, "get_s_idle": idle.seconds}
    return [
        _rate_row(backend, "prune of one raw day of the largest suite: rows deleted a second",
                  deleted, seconds, "rows", PRUNE_RATE_LIMIT, figures=figures,
                  detail=f"{deleted:,} testcase results in {fmt_seconds(seconds)}; "
                         f"{world['raw_days'] - 1} raw days kept"),
        _latency_row(backend, "GET /ledger while the prune runs (p95)", pruning.seconds,
                     LEDGER_P95_MS / 1000, baseline=f"{p95_text(idle.seconds)} idle",
                     detail=f"{len(pruning.seconds):,} GETs one after another during the "
                            f"prune, {len(idle.seconds):,} idle before the ingest",
                     figures=figures),
    ]


def _size_rows(backend: str, sizes: dict, made: dict, xml: float) -> list[Row]:
    """Bytes per million testcases, raw and rolled up, each against the XML's."""
    retention = settings.JUNIT_RETENTION_DAYS
    figures = {"bytes": sizes, "xml_bytes_per_testcase": xml, **made}
    raw = sizes["raw"] / made["case_results"]
    tables = sizes["tables"]
    shares = ", ".join(f"{model.__name__} {tables[model._meta.db_table] / sizes['raw']:.0%}"
                       for model in RAW)
    kinds = {
        "raw": (raw, f"files and testcase results with their indexes: "
                     f"{fmt_bytes(sizes['raw'])} ({shares}) for {made['case_results']:,} results "
                     f"({made['raw_days']} days of the largest suite); at the issue's "
                     f"{COMPANY_DAY / 1e6:.0f}M testcases a day kept {retention} days "
                     f"(JUNIT_RETENTION_DAYS): {fmt_bytes(raw * COMPANY_DAY * retention)}"),
        "rolled up": (sizes["rolled_up"] / made["rolled_up_testcases"],
                      f"NodeDay and SignatureDay with their indexes: "
                      f"{fmt_bytes(sizes['rolled_up'])} for {made['rolled_up_testcases']:,} "
                      f"testcases ({made['tests']:,} tests run {RUNS_PER_DAY} times a day for "
                      f"{ROLLUP_DAYS} days); the database {fmt_bytes(sizes['database'])}"),
    }
    return [Row(ID, backend, f"database bytes per million testcases, {kind}",
                subject=fmt_bytes(per_testcase * 1e6), baseline=f"{fmt_bytes(xml * 1e6)} of XML",
                goal=f"≤ 1{TIMES} the XML", ratio=per_testcase / xml, limit=1.0, detail=detail,
                figures=figures).judge()
            for kind, (per_testcase, detail) in kinds.items()]
