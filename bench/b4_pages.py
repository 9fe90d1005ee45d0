"""B4: the overview, the ledger page, a report page (1k rows) and a batch page (1k records),
in a suite with 10k open entries and 1M measurements, signed in as a staff user (a lead of
every suite).

Each page is fetched in-process through Django's test client, so the time is the
server's own (middleware, view, queries, template), without a network. The pages
alternate; each gets one untimed request first, and its queries are counted on a further
untimed request. The suite also holds 20k nodes (1 in 200 made tier 1, so some entries are
tier violations), 1,000 reports of 1,000 measurements, 100 verdict batches of 1,000
records, one audit event per entry, and a year of rollups.
"""

from __future__ import annotations

import json
from datetime import timedelta

from django.db import connection
from django.utils import timezone

from flakeboard import rules
from ledger.models import AuditEvent
from runs.models import Measurement, NodeVerdict, ReasonRollup, Report, VerdictBatch

from . import data
from .measure import Row, progress, scaled
from .pages import page_rows

ID = "B4"
ROWS_PER_UPLOAD = 1_000
MEASUREMENT_COLUMNS = ("report_id", "suite_id", "node_id", "position", "created_at", "n",
                       "fails", "upper95", "reported_upper95", "seed_base", "classification",
                       "status", "reason", "flags", "entry_id", "entry_state")
VERDICT_COLUMNS = ("batch_id", "suite_id", "node_id", "position", "created_at",
                   "property_check", "fixture_lock", "flake_status", "fixture_manifest", "seed",
                   "freeze_expires", "stated_tier", "effective_lock", "effective_status",
                   "verdict", "reason", "flags", "entry_state")
EVENT_COLUMNS = ("suite_id", "entry_id", "action", "actor", "at", "before", "after", "note")
OUTCOMES = (  # (fails out of 200, status, reason), weighted toward the everyday
    *[(0, "OK", "within_budget")] * 16, (1, "OK", "within_budget"),
    (4, "WARN", "quarantined"), (6, "FAIL", "over_budget"), (9, "FAIL", "quarantine_expired"),
)
VERDICTS = (*[("pass", "match", "stable", "accept", "clean", "[]")] * 16,
            ("fail", "match", "stable", "reject", "property_fail", "[]"),
            ("not_run", "match", "stable", "hold", "property_not_run", "[]"),
            ("pass", "drifted", "stable", "hold", "fixture_drifted", "[]"),
            ("pass", "match", "frozen", "hold", "frozen_node", '["ledger_disagrees"]'))


def _uploads(suite, node_pks, today, *, reports: int, batches: int) -> tuple[int, int]:
    span = len(node_pks) - ROWS_PER_UPLOAD
    report_objs = Report.objects.bulk_create([
        Report(suite=suite, created_at=data.moment(today - timedelta(hours=8 * i)), day=today,
               commit=f"{i:010x}", branch="main", evidence=f"ci/run-{90000 + i}",
               uploaded_by="token fbw_bench (ci)", digest=f"r{i:063d}", status="FAIL",
               reason="over_budget", exit_code=1, quarantined=0, test_set_size=len(node_pks),
               share=0.0, max_share=0.5, measurement_count=ROWS_PER_UPLOAD, fail_count=100,
               warn_count=50)
        for i in range(reports)
    ], batch_size=500)
    uppers = {fails: rules.upper95(fails, 200) for fails, _, _ in OUTCOMES}

    def measurement_rows():
        for i, report in enumerate(report_objs):
            created = data.db_datetime(report.created_at)
            offset = (i * 997) % max(1, span)
            for pos in range(ROWS_PER_UPLOAD):
                fails, status, reason = OUTCOMES[(pos * 7 + i) % len(OUTCOMES)]
                yield (report.pk, suite.pk, node_pks[offset + pos], pos, created, 200, fails,
                       uppers[fails], None, data.SEED, "", status, reason, "[]", None, "")

    batch_objs = VerdictBatch.objects.bulk_create([
        VerdictBatch(suite=suite, created_at=data.moment(today - timedelta(hours=4 * i), 11),
                     day=today, patch=f"patch-{i}", commit=f"{i:010x}",
                     uploaded_by="token fbw_bench (ci)", digest=f"b{i:063d}", verdict="reject",
                     reason="property_fail", exit_code=1, record_count=ROWS_PER_UPLOAD,
                     reason_counts={"clean": 800, "property_fail": 50})
        for i in range(batches)
    ], batch_size=500)

    def verdict_rows():
        for i, batch in enumerate(batch_objs):
            created = data.db_datetime(batch.created_at)
            offset = (i * 991) % max(1, span)
            for pos in range(ROWS_PER_UPLOAD):
                prop, lock, status, verdict, reason, flags = VERDICTS[(pos * 3 + i) % 20]
                yield (batch.pk, suite.pk, node_pks[offset + pos], pos, created, prop, lock,
                       status, data.MANIFEST, data.SEED, None, None, lock, status, verdict,
                       reason, flags, "")

    measured = data.insert_rows(Measurement, MEASUREMENT_COLUMNS, measurement_rows())
    verdicts = data.insert_rows(NodeVerdict, VERDICT_COLUMNS, verdict_rows())
    return measured, verdicts


def _world(scale: float):
    today = timezone.now().date()
    suite = data.make_suite("b4")
    entries = scaled(scale, 10_000, 20)
    nodes = data.make_nodes(suite, data.nodeids(max(entries * 2, ROWS_PER_UPLOAD + 10)), today,
                            tier_one_every=200)
    progress(f"{ID}: {len(nodes):,} nodes and {entries:,} open entries")
    open_entries = data.make_entries(suite, nodes[:entries], today, seed=4)
    data.make_entries(suite, nodes[entries : entries + entries // 5], today, seed=5, cleared=True)
    data.insert_rows(AuditEvent, EVENT_COLUMNS, (
        (suite.pk, e.pk, "create", e.created_by, data.db_datetime(e.created_at), "{}",
         json.dumps({"owner": e.owner, "expires": e.expires.isoformat()}), e.note)
        for e in open_entries
    ))
    reports = scaled(scale, 1_000)
    batches = scaled(scale, 100, 2)
    progress(f"{ID}: {reports:,} reports and {batches:,} batches of {ROWS_PER_UPLOAD:,} rows")
    measured, verdicts = _uploads(suite, [n.pk for n in nodes], today,
                                  reports=reports, batches=batches)
    data.insert_rows(ReasonRollup, data.ROLLUP_COLUMNS, data.rollup_rows(
        suite, days=365, per_day=2 * ROWS_PER_UPLOAD, today=today, seed=4))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return suite, {"nodes": len(nodes), "open_entries": entries, "measurements": measured,
                   "verdicts": verdicts}


def run(scale: float, backend: str, workdir) -> list[Row]:
    suite, world = _world(scale)
    report = Report.objects.filter(suite=suite).order_by("-created_at").first()
    batch = VerdictBatch.objects.filter(suite=suite).order_by("-created_at").first()
    pages = {
        "overview": f"/suites/{suite.slug}/",
        "ledger page": f"/suites/{suite.slug}/ledger/",
        "report page (1k-row report)": f"/suites/{suite.slug}/reports/{report.pk}/",
        "batch page (1k-record batch)": f"/suites/{suite.slug}/verdicts/{batch.pk}/",
    }
    return page_rows(ID, backend, pages, scale=scale, figures=world)
