"""A board with more than a year of history, made in bulk for the prune and backup tests:
reports and verdict batches every day for DAYS days (so some are past the 400 days kept),
their measurements, verdicts and per-day rollups, open entries with their audit events,
and three entries citing uploads from before the retention: one in its evidence, one in
its trail, one in an earlier evidence that an audit event holds.

``year_of_history`` runs inside a test's database or in a throwaway board's shell."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from django.urls import reverse

from bench import data
from ledger.models import AuditEvent, QuarantineEntry, Suite
from runs.models import Report, VerdictBatch

DAYS = 430
PER_DAY = 2  # reports a day, and as many batches
ROWS = 5  # measurements a report holds, and verdicts a batch
ENTRIES = 30


@dataclass(frozen=True)
class Year:
    cited_reports: frozenset[int]
    cited_batches: frozenset[int]


def upload_link(suite: Suite, name: str, pk: int) -> str:
    return f"https://board.example{reverse(name, args=[suite.slug, pk])}"


def year_of_history(suite: Suite, today: date, *, days: int = DAYS) -> Year:
    nodes = data.make_nodes(suite, data.nodeids(ROWS + ENTRIES + 10), today)
    data.history(suite, [n.pk for n in nodes], today, days=days, reports=days * PER_DAY,
                 batches=days * PER_DAY, rows=ROWS)
    entries = data.make_entries(suite, nodes[-ENTRIES:], today, seed=22)
    data.creation_events(suite, entries)
    oldest = today - timedelta(days=days - 1)
    reports = list(Report.objects.filter(suite=suite, day=oldest).values_list("pk", flat=True))
    batch = VerdictBatch.objects.filter(suite=suite, day=oldest).values_list("pk", flat=True)[0]
    in_evidence, in_trail, in_event = entries[:3]
    QuarantineEntry.objects.filter(pk=in_evidence.pk).update(
        evidence=upload_link(suite, "report", reports[0]) + "#m1")
    QuarantineEntry.objects.filter(pk=in_trail.pk).update(
        trail=[{"report": reports[1], "n": 200, "fails": 9, "clean": False}])
    AuditEvent.objects.create(
        suite=suite, entry=in_event, action=AuditEvent.Action.RENEW, actor="@finley",
        at=data.moment(today - timedelta(days=3)), note="New evidence.",
        before={"evidence": upload_link(suite, "batch", batch)},
        after={"evidence": in_event.evidence})
    return Year(frozenset(reports[:2]), frozenset([batch]))
