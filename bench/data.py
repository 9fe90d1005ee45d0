"""Benchmark data, made with a fixed seed: upload bodies, and bulk-inserted history.

Parents (suites, nodes, entries, uploads) go through the ORM's bulk_create, so their ids
come back; the large child tables (measurements, verdicts, events, rollups) are written
with raw executemany on SQLite and COPY on PostgreSQL.
"""

from __future__ import annotations

import itertools
import json
import random
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, time, timedelta

from django.contrib.auth import get_user_model
from django.db import connections, transaction

from flakeboard import rules
from ledger.models import AuditEvent, Node, QuarantineEntry, Suite
from ledger.tokens import token_create
from runs.ingest import signals_ingest
from runs.models import Measurement, NodeVerdict, ReasonRollup, Report, VerdictBatch

SEED = 9137
MANIFEST = "sha256:4c052d28d4f9bb3d962a5276d091e03db9d1988a12609573ca2f3f826328e538"
AREAS = ("ingest", "billing", "ledger", "export", "auth", "search", "queue", "render")
VERBS = ("stream", "retry", "timeout", "batch", "cache", "lock", "merge", "page", "sort")
OWNERS = ("@owner", "@finley", "@priya", "@sam", "qa-team@example.com")
STAFF_USERNAME = "bench-lead"


def rng(salt: int = 0) -> random.Random:
    return random.Random(SEED + salt)


def nodeids(count: int, prefix: str = "tests") -> list[str]:
    """Distinct, realistic pytest node ids: some parametrised, spread over modules."""
    ids = []
    for i in range(count):
        area = AREAS[i % len(AREAS)]
        verb = VERBS[(i // len(AREAS)) % len(VERBS)]
        module = i // 200
        param = f"[case{i % 7}]" if i % 3 == 0 else ""
        ids.append(f"{prefix}/{area}/test_{area}_{module:04d}.py::test_{verb}_{i}{param}")
    return ids


def signal_records(nodes: Sequence[str], seed: int) -> list[dict]:
    """One record per node, in the mix a busy CI produces: mostly clean, a few holds."""
    r = rng(seed)
    records = []
    for node in nodes:
        roll = r.random()
        missing = roll < 0.01
        drifted = 0.01 <= roll < 0.03
        frozen = r.random() < 0.02
        records.append({
            "node": node,
            "property_check": r.choices(("pass", "fail", "not_run"), (0.95, 0.02, 0.03))[0],
            "fixture_lock": "missing" if missing else ("drifted" if drifted else "match"),
            "flake_status": "frozen" if frozen else "stable",
            "fixture_manifest": None if missing else ("sha256:01d" if drifted else MANIFEST),
            "seed": SEED,
            "freeze_expires": "2099-01-01" if frozen and r.random() < 0.5 else None,
        })
    return records


def signals_body(records: list[dict], patch: str, evidence: str = "") -> bytes:
    return json.dumps(
        {"records": records, "patch": patch, "commit": f"{zlib.crc32(patch.encode()):010x}",
         **({"evidence": evidence} if evidence else {})}
    ).encode()


def moment(day: date, hour: int = 9) -> datetime:
    return datetime.combine(day, time(hour, 30), tzinfo=UTC)


def make_suite(slug: str, *, pin: bool = True) -> Suite:
    suite = Suite.objects.create(
        slug=slug, name=f"Bench {slug}", max_quarantined_share=0.5, max_quarantine_days=60,
    )
    if pin:
        suite.fixture_manifest, suite.fixture_seed = MANIFEST, SEED
        suite.save(update_fields=["fixture_manifest", "fixture_seed"])
    return suite


def known_from(suite: Suite, known: Sequence[str], commit: str) -> str:
    """``known`` uploaded to ``suite`` from ``commit`` (a signal upload, every node stable);
    a write token of the suite."""
    records = [{"node": node, "property_check": "pass", "fixture_lock": "match",
                "flake_status": "stable"} for node in known]
    signals_ingest(suite=suite, body=json.dumps({"records": records}).encode(), actor="bench",
                   query={"commit": commit, "patch": "main"})
    _, raw = token_create(suite=suite, scope="write", actor="bench", name="bench")
    return raw


def staff_user():
    user, _ = get_user_model().objects.get_or_create(
        username=STAFF_USERNAME, defaults={"is_staff": True, "is_superuser": True}
    )
    return user


def make_nodes(suite: Suite, ids: Sequence[str], today: date, *, tier_one_every=0) -> list[Node]:
    nodes = [
        Node(
            suite=suite, nodeid=nodeid, first_seen=today - timedelta(days=400),
            last_seen=today - timedelta(days=i % 3),
            tier=1 if tier_one_every and i % tier_one_every == tier_one_every - 1 else 2,
        )
        for i, nodeid in enumerate(ids)
    ]
    return Node.objects.bulk_create(nodes, batch_size=2000)


def make_entries(
    suite: Suite, nodes: Iterable[Node], today: date, *, seed: int, cleared: bool = False
) -> list[QuarantineEntry]:
    """Quarantine entries in every state: mostly active, some expiring, a few expired."""
    r = rng(seed)
    entries = []
    for node in nodes:
        fails = r.randint(3, 12)
        roll = r.random()
        days = r.randint(-9, -1) if roll < 0.08 else (r.randint(0, 7) if roll < 0.25 else
                                                      r.randint(8, 60))
        created = moment(today - timedelta(days=r.randint(1, 120)))
        entries.append(QuarantineEntry(
            suite=suite, node=node, seed_base=SEED, n=200, fails=fails,
            upper95=rules.upper95(fails, 200), owner=r.choice(OWNERS),
            expires=today + timedelta(days=days),
            evidence=f"https://ci.example.com/runs/{r.randint(80000, 199999)}",
            note="Flaky under load; owner investigating.", renewals=r.randint(0, 3),
            created_at=created, created_by=r.choice(OWNERS[:4]), updated_at=created,
            cleared_at=created + timedelta(days=5) if cleared else None,
            cleared_note="Fixed the race." if cleared else "",
        ))
    return QuarantineEntry.objects.bulk_create(entries, batch_size=2000)


def db_datetime(value: datetime, using: str = "default"):
    return connections[using].ops.adapt_datetimefield_value(value)


def db_date(value: date, using: str = "default"):
    return connections[using].ops.adapt_datefield_value(value)


def insert_rows(model, columns: Sequence[str], rows: Iterable[Sequence], *,
                using: str = "default", chunk: int = 5000) -> int:
    """Insert raw rows into the model's table without the ORM; returns the row count."""
    connection = connections[using]
    table = connection.ops.quote_name(model._meta.db_table)
    names = ", ".join(connection.ops.quote_name(c) for c in columns)
    count = 0
    with transaction.atomic(using=using), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
                    count += 1
            return count
        marks = ", ".join(["%s"] * len(columns))
        sql = f"INSERT INTO {table} ({names}) VALUES ({marks})"  # noqa: S608 - model names
        iterator = iter(rows)
        while batch := list(itertools.islice(iterator, chunk)):
            cursor.executemany(sql, batch)
            count += len(batch)
    return count


ROLLUP_REASONS = {
    "verdicts": (("clean", 0.90), ("property_fail", 0.02), ("property_not_run", 0.03),
                 ("frozen_node", 0.02), ("fixture_drifted", 0.02), ("fixture_missing", 0.01)),
    "reports": (("within_budget", 0.95), ("over_budget", 0.02), ("quarantined", 0.02),
                ("quarantine_expired", 0.005), ("too_few_runs", 0.005)),
}


def rollup_rows(suite: Suite, *, days: int, per_day: int, today: date, seed: int,
                using: str = "default") -> Iterable[tuple]:
    """Rollup rows as the ingest would have left them after ``days`` days of ``per_day``
    node verdicts (and as many measurements) a day."""
    r = rng(seed)
    for offset in range(days):
        day = db_date(today - timedelta(days=offset), using)
        volume = max(1, int(per_day * r.uniform(0.7, 1.3)))
        for source, mix in ROLLUP_REASONS.items():
            for reason, share in mix:
                count = int(volume * share * r.uniform(0.5, 1.5))
                if count:
                    yield (suite.pk, day, source, reason, count)


ROLLUP_COLUMNS = ("suite_id", "day", "source", "reason", "count")


EVENT_COLUMNS = ("suite_id", "entry_id", "action", "actor", "at", "before", "after", "note")


def creation_events(suite: Suite, entries: Iterable[QuarantineEntry]) -> int:
    """One ``create`` audit event per entry, as quarantine_create writes it."""
    return insert_rows(AuditEvent, EVENT_COLUMNS, (
        (suite.pk, e.pk, "create", e.created_by, db_datetime(e.created_at), "{}",
         json.dumps({"owner": e.owner, "expires": e.expires.isoformat()}), e.note)
        for e in entries
    ))


MEASUREMENT_COLUMNS = ("report_id", "suite_id", "node_id", "position", "created_at", "n",
                       "fails", "upper95", "reported_upper95", "seed_base", "classification",
                       "status", "reason", "flags", "entry_id", "entry_state")
VERDICT_COLUMNS = ("batch_id", "suite_id", "node_id", "position", "created_at",
                   "property_check", "fixture_lock", "flake_status", "fixture_manifest", "seed",
                   "freeze_expires", "stated_tier", "effective_lock", "effective_status",
                   "verdict", "reason", "flags", "entry_state", "sent", "flipped")
OUTCOMES = (  # (fails out of 200, status, reason), weighted toward the everyday
    *[(0, "OK", "within_budget")] * 16, (1, "OK", "within_budget"),
    (4, "WARN", "quarantined"), (6, "FAIL", "over_budget"), (9, "FAIL", "quarantine_expired"),
)
VERDICTS = (*[("pass", "match", "stable", "accept", "clean", "[]")] * 16,
            ("fail", "match", "stable", "reject", "property_fail", "[]"),
            ("not_run", "match", "stable", "hold", "property_not_run", "[]"),
            ("pass", "drifted", "stable", "hold", "fixture_drifted", "[]"),
            ("pass", "match", "frozen", "hold", "frozen_node", '["ledger_disagrees"]'))


def uploads(suite: Suite, node_pks: Sequence[int], today: date, *, reports: int, batches: int,
            rows: int, days: int = 0) -> tuple[int, int, Counter]:
    """``reports`` reports and ``batches`` verdict batches of ``rows`` rows each, the newest
    first: with ``days``, spread evenly over that many days up to today, each dated its day
    (a board's history); without, all dated today. Returns the measurements and verdicts
    written, and their (source, day, reason) counts, the rollups the ingest would have made."""
    span = len(node_pks) - rows
    counts: Counter = Counter()

    def when(i: int, total: int, hours: int, hour: int = 9) -> tuple[datetime, date]:
        if not days:
            return moment(today - timedelta(hours=hours * i), hour), today
        day = today - timedelta(days=i * days // total)
        return moment(day, hour), day

    report_objs = Report.objects.bulk_create([
        Report(suite=suite, created_at=created, day=day,
               commit=f"{i:010x}", branch="main", evidence=f"ci/run-{90000 + i}",
               uploaded_by="token fbw_bench (ci)", digest=f"r{i:063d}", status="FAIL",
               reason="over_budget", exit_code=1, quarantined=0, test_set_size=len(node_pks),
               share=0.0, max_share=0.5, measurement_count=rows, fail_count=rows // 10,
               warn_count=rows // 20)
        for i in range(reports) for created, day in [when(i, reports, 8)]
    ], batch_size=500)
    uppers = {fails: rules.upper95(fails, 200) for fails, _, _ in OUTCOMES}

    def measurement_rows():
        for i, report in enumerate(report_objs):
            created = db_datetime(report.created_at)
            offset = (i * 997) % max(1, span)
            for pos in range(rows):
                fails, status, reason = OUTCOMES[(pos * 7 + i) % len(OUTCOMES)]
                counts["reports", report.day, reason] += 1
                yield (report.pk, suite.pk, node_pks[offset + pos], pos, created, 200, fails,
                       uppers[fails], None, SEED, "", status, reason, "[]", None, "")

    batch_objs = VerdictBatch.objects.bulk_create([
        VerdictBatch(suite=suite, created_at=created, day=day, patch=f"patch-{i}",
                     commit=f"{i:010x}", uploaded_by="token fbw_bench (ci)",
                     digest=f"b{i:063d}", verdict="reject", reason="property_fail",
                     exit_code=1, record_count=rows,
                     reason_counts={"clean": rows * 4 // 5, "property_fail": rows // 20})
        for i in range(batches) for created, day in [when(i, batches, 4, 11)]
    ], batch_size=500)

    def verdict_rows():
        for i, batch in enumerate(batch_objs):
            created = db_datetime(batch.created_at)
            offset = (i * 991) % max(1, span)
            for pos in range(rows):
                prop, lock, status, verdict, reason, flags = VERDICTS[(pos * 3 + i) % 20]
                counts["verdicts", batch.day, reason] += 1
                yield (batch.pk, suite.pk, node_pks[offset + pos], pos, created, prop, lock,
                       status, MANIFEST, SEED, None, None, lock, status, verdict,
                       reason, flags, "", True, False)

    measured = insert_rows(Measurement, MEASUREMENT_COLUMNS, measurement_rows())
    verdicts = insert_rows(NodeVerdict, VERDICT_COLUMNS, verdict_rows())
    return measured, verdicts, counts


def history(suite: Suite, node_pks: Sequence[int], today: date, *, days: int, reports: int,
            batches: int, rows: int) -> tuple[int, int]:
    """``days`` days of uploads (see ``uploads``) with the per-day rollups their rows make,
    as a board that has run that long holds them; the measurements and verdicts written."""
    measured, verdicts, counts = uploads(suite, node_pks, today, reports=reports,
                                         batches=batches, rows=rows, days=days)
    insert_rows(ReasonRollup, ROLLUP_COLUMNS, (
        (suite.pk, db_date(day), source, reason, count)
        for (source, day, reason), count in sorted(counts.items())))
    return measured, verdicts
