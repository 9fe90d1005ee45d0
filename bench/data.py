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
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, time, timedelta

from django.contrib.auth import get_user_model
from django.db import connections, transaction

from flakeboard import rules
from ledger.models import Node, QuarantineEntry, Suite

SEED = 9137
MANIFEST = "sha256:4be1c0de"
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
            "fixture_manifest": None if missing else ("sha256:0ld" if drifted else MANIFEST),
            "seed": SEED,
            "freeze_expires": "2099-01-01" if frozen and r.random() < 0.5 else None,
        })
    return records


def signals_body(records: list[dict], patch: str) -> bytes:
    return json.dumps(
        {"records": records, "patch": patch, "commit": f"{zlib.crc32(patch.encode()):010x}"}
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
