"""Reports and verdict batches are kept RETENTION_DAYS days (400 by default), today
included; ``manage.py prune [--dry-run]`` deletes older ones with their rows, in chunks,
idempotently. The rollups (so the trends), entries, audit events and every upload an entry
cites are kept."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import call_command
from django.urls import reverse

from flakeboard import rules
from ledger.models import AuditEvent, QuarantineEntry
from ledger.quarantine import quarantine_create, quarantine_renew
from runs import prune
from runs.ingest import report_ingest, signals_ingest
from runs.models import Measurement, NodeVerdict, ReasonRollup, Report, VerdictBatch
from runs.trend_counts import reason_counts, share_over_time
from tests.helpers import body, measurement, record
from tests.world import module_world

AGES = (0, 399, 400, 450)  # days ago; 400 days kept: 0 and 399 stay


def at(today, days_ago: int) -> datetime:
    return datetime.combine(today - timedelta(days=days_ago), time(12), tzinfo=UTC)


def add_history(suite, today):
    uploads = {}
    for age in AGES:
        rows = [measurement(f"t.py::a{age}"), measurement(f"t.py::b{age}", fails=9)]
        report = report_ingest(suite=suite, body=body(rows), actor="ci", now=at(today, age))
        signals = [record(f"t.py::a{age}"), record(f"t.py::b{age}", prop="fail")]
        batch = signals_ingest(suite=suite, body=body(signals), actor="ci", now=at(today, age))
        uploads[age] = (report.upload.pk, batch.upload.pk)
    return uploads


# history: a report and a batch at each age, two rows each; their ids by age.
build_world, history = module_world("history", add_history)


def prune_command(*args) -> str:
    out = StringIO()
    call_command("prune", *args, stdout=out)
    return out.getvalue()


def kept_ages(history) -> list[int]:
    reports = set(Report.objects.values_list("pk", flat=True))
    return [age for age, (report, _) in history.items() if report in reports]


def trends_answer(suite, today) -> tuple:
    start = today - timedelta(days=500)
    return (*(reason_counts(suite, start=start, end=today, bucket=bucket, source=source)
              for bucket in ("day", "week") for source in ("reports", "verdicts")),
            share_over_time(suite, start=start, end=today))


def test_the_default_is_four_hundred_days():
    assert settings.RETENTION_DAYS == 400


def test_the_cutoff_is_one_pure_window():
    today = datetime(2026, 3, 1).date()
    window = rules.retention_window(400)
    assert window.contains(today - timedelta(days=399), today)
    assert not window.contains(today - timedelta(days=400), today)


def test_old_uploads_go_young_ones_stay_and_the_trends_answer_the_same(suite, today, history):
    before = trends_answer(suite, today)
    rollups = sorted(ReasonRollup.objects.values_list("source", "day", "reason", "count"))
    assert prune_command() == (
        "Deleted 2 reports (4 measurements) and 2 verdict batches (4 verdicts) older than "
        "400 days; kept 0 older uploads that entries cite.\n")
    assert kept_ages(history) == [0, 399]
    assert sorted(VerdictBatch.objects.values_list("pk", flat=True)) == sorted(
        history[0][1:] + history[399][1:])
    assert Measurement.objects.count() == NodeVerdict.objects.count() == 4
    assert sorted(ReasonRollup.objects.values_list("source", "day", "reason", "count")) == rollups
    assert trends_answer(suite, today) == before


def test_a_second_prune_deletes_nothing(suite, today, history):
    prune_command()
    assert prune_command().startswith(
        "Deleted 0 reports (0 measurements) and 0 verdict batches (0 verdicts)")


def test_a_dry_run_counts_and_deletes_nothing(suite, today, history):
    counts = (Report.objects.count(), Measurement.objects.count(),
              VerdictBatch.objects.count(), NodeVerdict.objects.count())
    assert prune_command("--dry-run") == (
        "Would delete 2 reports (4 measurements) and 2 verdict batches (4 verdicts) older "
        "than 400 days; kept 0 older uploads that entries cite.\n")
    assert (Report.objects.count(), Measurement.objects.count(),
            VerdictBatch.objects.count(), NodeVerdict.objects.count()) == counts


def test_the_retention_is_the_setting(suite, today, history, settings):
    settings.RETENTION_DAYS = 1
    prune_command()
    assert kept_ages(history) == [0]


def test_chunks_of_one_delete_the_same(suite, today, history, monkeypatch):
    monkeypatch.setattr(prune, "CHUNK", 1)
    before = trends_answer(suite, today)
    prune_command()
    assert kept_ages(history) == [0, 399]
    assert VerdictBatch.objects.count() == 2
    assert trends_answer(suite, today) == before


def _entry(suite, today, evidence: str) -> QuarantineEntry:
    suite.max_quarantined_share = 1.0  # the few nodes here: any share is within the cap
    suite.save()
    return quarantine_create(suite=suite, nodeid="t.py::b450", owner="@finley",
                             expires=today + timedelta(days=10), evidence=evidence,
                             actor="@finley", today=today)


def test_an_upload_an_entry_cites_is_kept(suite, today, history):
    report, batch = history[450]
    link = f"https://board.example{reverse('report', args=[suite.slug, report])}#m1"
    _entry(suite, today, link)
    batch_link = f"https://board.example{reverse('batch', args=[suite.slug, batch])}"
    QuarantineEntry.objects.update(evidence=batch_link)  # its earlier evidence: in the event
    assert prune_command().endswith("kept 2 older uploads that entries cite.\n")
    assert kept_ages(history) == [0, 399, 450]
    assert VerdictBatch.objects.filter(pk=batch).exists()
    assert Measurement.objects.filter(report=report).count() == 2


def test_a_report_in_an_entry_trail_is_kept(suite, today, history):
    entry = _entry(suite, today, "ci/run-1")
    report = history[450][0]
    QuarantineEntry.objects.filter(pk=entry.pk).update(
        trail=[{"report": report, "n": 200, "fails": 9, "clean": False}])
    prune_command()
    assert kept_ages(history) == [0, 399, 450]


def test_an_entry_renewed_during_the_prune_keeps_its_new_evidence(suite, today, history,
                                                                  monkeypatch):
    """The citations read at the start are read again under each chunk's lock: an entry
    changed meanwhile (its audit event) keeps what it now cites."""
    entry = _entry(suite, today, "ci/run-1")
    report = history[450][0]
    cited = prune.cited_uploads

    def renewed_meanwhile(**kwargs):
        found = cited(**kwargs)
        if not kwargs and not AuditEvent.objects.filter(action="renew").exists():
            quarantine_renew(entry=entry, expires=today + timedelta(days=20), actor="@finley",
                             evidence="https://b.example"
                             + reverse("report", args=[suite.slug, report]),
                             today=today)
        return found

    monkeypatch.setattr(prune, "cited_uploads", renewed_meanwhile)
    prune_command()
    assert kept_ages(history) == [0, 399, 450]


def test_a_trail_with_failures_ci_saw_prunes_and_keeps_the_reports_it_cites(suite, today,
                                                                             history):
    """The demo's shape: a quarantined node measured, then seen failing by the gate (a
    sighting cites no report). The dry run and the prune read its trail alike."""
    entry = _entry(suite, today, "ci/run-1")
    nodeid = entry.node.nodeid
    measured = report_ingest(suite=suite, body=body([measurement(nodeid, fails=9)]),
                             actor="ci", now=at(today, 450) + timedelta(hours=1))
    signals_ingest(suite=suite, body=body([record(nodeid, prop="fail")]), actor="ci",
                   now=at(today, 1))
    trail = QuarantineEntry.objects.get(pk=entry.pk).trail
    assert [seen.get("ci") for seen in trail] == [None, "gate"]
    assert prune_command("--dry-run") == (
        "Would delete 2 reports (4 measurements) and 2 verdict batches (4 verdicts) older "
        "than 400 days; kept 1 older uploads that entries cite.\n")
    assert prune_command() == (
        "Deleted 2 reports (4 measurements) and 2 verdict batches (4 verdicts) older than "
        "400 days; kept 1 older uploads that entries cite.\n")
    assert Report.objects.filter(pk=measured.upload.pk).exists()
    assert kept_ages(history) == [0, 399]


@pytest.mark.slow
@pytest.mark.django_db
def test_prune_runs_on_the_demo_board(settings):
    """The board ``make run`` loads: its entries' trails hold failures CI saw. A dry run
    counts what the prune then deletes, and a second prune deletes nothing."""
    call_command("demo", stdout=StringIO())
    trails = QuarantineEntry.objects.values_list("trail", flat=True)
    assert any(seen.get("ci") for trail in trails for seen in trail)
    cited = {seen["report"] for trail in trails for seen in trail if "report" in seen}
    settings.RETENTION_DAYS = 30
    would = prune_command("--dry-run").removeprefix("Would delete ")
    assert prune_command().removeprefix("Deleted ") == would
    assert not would.startswith("0 reports")
    assert cited <= set(Report.objects.values_list("pk", flat=True))
    assert prune_command().startswith("Deleted 0 reports (0 measurements) and 0 verdict")
