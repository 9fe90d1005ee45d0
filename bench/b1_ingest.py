"""B1: one 100k-record signal batch through the ingest service (validate, evaluate, store,
roll up), against ``json.loads`` of the same body plus a raw DB-API ``executemany`` of the
same rows into an equivalent table on the same database: the verdict table's columns
(the node's id as text, since the baseline resolves nothing) and the same indexes, read
from the schema.

The suite already knows its nodes (written directly beforehand), as it does on every day
but its first; each timed upload is the first of its day, so it also moves every node's
last-seen date. 2% of the nodes hold a quarantine entry, and the suite has a fixture pin.
The process's peak RSS is reset once the data is made, and read after the first ingest.
After the timed rounds, one more batch of the same shape (the first upload of the next day)
is ingested under cProfile, for "Where the time goes".
"""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from runs.ingest import signals_ingest
from runs.models import NodeVerdict

from . import data, profiling
from .measure import (
    TIMES,
    Row,
    fmt_bytes,
    fmt_seconds,
    interleaved,
    peak_rss,
    progress,
    repeats,
    reset_peak_rss,
    scaled,
)

ID = "B1"
RECORDS = 100_000
LIMIT = 3.0
TABLE = """CREATE TABLE bench_raw_verdict (
    id {pk}, batch_id integer NOT NULL, suite_id integer NOT NULL,
    node varchar(1000) NOT NULL, position integer NOT NULL, created_at {timestamp} NOT NULL,
    property_check varchar(8) NOT NULL, fixture_lock varchar(8) NOT NULL,
    flake_status varchar(8) NOT NULL, fixture_manifest varchar(200) NULL, seed bigint NULL,
    freeze_expires date NULL, stated_tier smallint NULL)"""
INSERT = (
    "INSERT INTO bench_raw_verdict (batch_id, suite_id, node, position, created_at, "
    "property_check, fixture_lock, flake_status, fixture_manifest, seed, freeze_expires, "
    "stated_tier) VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p})"
)
BASELINE_COLUMNS = {"batch_id", "suite_id", "node", "position", "created_at"}
# What still separates the figure from its goal, as the profile shows it (docs/benchmarks.md).
GAP = """
The subject does what the baseline does (json.loads of the body and one executemany of
the rows, here into a table with more columns) and, on top of it, validates every record,
finds every node id's row, reads the nodes' open quarantine entries, arbitrates each
distinct combination of signals and entry once, marks the nodes seen today and adds to the
rollups. In the profile the verdict rows' executemany, which the baseline pays too, is
about a third of the time; parsing and validating the body (pydantic with the node-id and
text checks) a sixth; finding the upload's nodes and marking them seen (one UPDATE of
every node's last-seen date on its first upload of the day) about a quarter; the loop
that builds each row and answer about a tenth; the commit and smaller steps the rest. No
one step dominates: what is left above the baseline is the sum of these passes over the
records in Python, each already one pass with no per-row query.
"""


def verdict_indexes() -> list[str]:
    """runs_nodeverdict's indexes, on the baseline's columns (the node's id as text)."""
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, NodeVerdict._meta.db_table)
    statements = []
    for i, (_, c) in enumerate(sorted(found.items())):
        if not c["index"] or c["primary_key"] or c["unique"]:
            continue
        columns = ["node" if col == "node_id" else col for col in c["columns"]]
        if not set(columns) <= BASELINE_COLUMNS:
            continue
        orders = c.get("orders") or ["ASC"] * len(columns)
        keys = ", ".join(f"{col} {order or 'ASC'}" for col, order in
                         zip(columns, orders, strict=False))
        statements.append(f"CREATE INDEX bench_raw_verdict_{i} ON bench_raw_verdict ({keys})")
    return statements


class RawTable:
    """The baseline: the bare DB-API driver, no ORM, no validation, one transaction."""

    def __init__(self, vendor: str):
        self.vendor = vendor
        if vendor == "postgresql":
            import psycopg

            self.conn = psycopg.connect(os.environ["DATABASE_URL"])
            ddl = TABLE.format(pk="bigserial PRIMARY KEY", timestamp="timestamptz")
            self.sql = INSERT.format(p="%s")
        else:
            self.conn = sqlite3.connect(settings.DATABASES["default"]["NAME"],
                                        isolation_level=None)
            self.conn.executescript("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
            ddl = TABLE.format(pk="integer PRIMARY KEY AUTOINCREMENT", timestamp="text")
            self.sql = INSERT.format(p="?")
        self.indexes = verdict_indexes()
        self.conn.execute(ddl)
        for statement in self.indexes:
            self.conn.execute(statement)
        if vendor == "postgresql":
            self.conn.commit()

    def load(self, body: bytes, batch: int, suite: int, created) -> None:
        created = created if self.vendor == "postgresql" else created.isoformat(" ")
        records = json.loads(body)["records"]
        rows = [
            (batch, suite, r["node"], i, created, r["property_check"], r["fixture_lock"],
             r["flake_status"], r.get("fixture_manifest"), r.get("seed"),
             r.get("freeze_expires"), r.get("tier"))
            for i, r in enumerate(records)
        ]
        if self.vendor == "postgresql":
            with self.conn.transaction(), self.conn.cursor() as cursor:
                cursor.executemany(self.sql, rows)
        else:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.executemany(self.sql, rows)
            self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()


def run(scale: float, backend: str, workdir) -> list[Row]:
    count = scaled(scale, RECORDS, 100)
    rounds = repeats(scale, 3)
    ids = data.nodeids(count)
    suite = data.make_suite("b1")
    today = timezone.now().date()
    first = today - timedelta(days=rounds + 1)
    data.make_nodes(suite, ids, first)
    nodes = list(suite.nodes.order_by("pk")[::50])
    data.make_entries(suite, nodes, today, seed=1)
    bodies = [data.signals_body(data.signal_records(ids, i + 1), f"patch-{i}")
              for i in range(rounds)]
    moments = [data.moment(first + timedelta(days=i + 1)) for i in range(rounds)]
    raw = RawTable(connection.vendor)

    memory = {}

    def subject(i):
        outcome = signals_ingest(suite=suite, body=bodies[i], actor="bench", now=moments[i])
        assert not outcome.duplicate and outcome.upload.record_count == count
        if i == 0:  # the first run of all (round 0 starts with the subject): its own peak
            memory["peak"] = peak_rss()

    def baseline(i):
        raw.load(bodies[i], i, suite.pk, moments[i])

    progress(f"{ID}: {rounds} rounds, subject and baseline interleaved")
    memory["before"] = reset_peak_rss()  # the data and bodies made, nothing ingested yet
    try:
        times = interleaved({"subject": subject, "baseline": baseline}, rounds)
    finally:
        raw.close()
    # One batch more, made only now (it does not weigh on the figures above): the first
    # upload of the day after the rounds', under the profiler.
    progress(f"{ID}: one more ingest, under cProfile")
    bodies.append(data.signals_body(data.signal_records(ids, rounds + 1), f"patch-{rounds}"))
    moments.append(data.moment(first + timedelta(days=rounds + 1)))
    profile = profiling.profile(lambda: subject(rounds))
    subject_s, baseline_s = times.median("subject"), times.median("baseline")
    grown = memory["peak"] - memory["before"]
    return [Row(
        ID, backend, f"signals_ingest of one {count:,}-record batch",
        subject=fmt_seconds(subject_s), baseline=fmt_seconds(baseline_s),
        goal=f"≤ {LIMIT:g}{TIMES} baseline", ratio=subject_s / baseline_s, limit=LIMIT,
        detail=f"{count / subject_s:,.0f} records/s through the service; baseline json.loads "
               f"+ {connection.vendor} executemany into a table with "
               f"{len(raw.indexes)} indexes; CPU of this process: {times.cpu_text()}; "
               f"peak RSS of this process "
               f"{fmt_bytes(memory['peak'])}, {fmt_bytes(grown)} of it for the ingest "
               f"({grown / len(bodies[0]):.1f}{TIMES} the {fmt_bytes(len(bodies[0]))} body; "
               f"goal ≤ 10{TIMES})",
        figures={"records": count, **times.figures(), "body_bytes": len(bodies[0]),
                 "peak_rss_bytes": memory["peak"], "rss_before_bytes": memory["before"],
                 "peak_rss_increase_bytes": grown,
                 "peak_rss_increase_over_body": grown / len(bodies[0]), "profile": profile},
    ).judge()]
