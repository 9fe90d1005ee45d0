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

from django.db import connection
from django.utils import timezone

from runs.models import ReasonRollup, Report, VerdictBatch

from . import data
from .measure import Row, progress, scaled
from .pages import page_rows

ID = "B4"
ROWS_PER_UPLOAD = 1_000


def _world(scale: float):
    today = timezone.now().date()
    suite = data.make_suite("b4")
    entries = scaled(scale, 10_000, 20)
    nodes = data.make_nodes(suite, data.nodeids(max(entries * 2, ROWS_PER_UPLOAD + 10)), today,
                            tier_one_every=200)
    progress(f"{ID}: {len(nodes):,} nodes and {entries:,} open entries")
    open_entries = data.make_entries(suite, nodes[:entries], today, seed=4)
    data.make_entries(suite, nodes[entries : entries + entries // 5], today, seed=5, cleared=True)
    data.creation_events(suite, open_entries)
    reports = scaled(scale, 1_000)
    batches = scaled(scale, 100, 2)
    progress(f"{ID}: {reports:,} reports and {batches:,} batches of {ROWS_PER_UPLOAD:,} rows")
    measured, verdicts, _ = data.uploads(suite, [n.pk for n in nodes], today, reports=reports,
                                         batches=batches, rows=ROWS_PER_UPLOAD)
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
