"""Raw JUnit rows are kept JUNIT_RETENTION_DAYS days (30 by default), today included;
``manage.py prune_junit [--dry-run]`` deletes older ones, in chunks, idempotently. The
files' counts and the per-day rollups stay."""

from __future__ import annotations

import re
from datetime import datetime, time, timedelta
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from junit import prune
from junit.ingest import junit_ingest
from junit.models import CaseResult, JobOutcome, JUnitFile, NodeDay, SignatureDay
from tests.junit_files import junit_xml

CASES = [("tests.test_a", "test_ok", "passed"), ("tests.test_a", "test_bad", "failed")]


def upload(suite, days_ago: int, commit: str):
    today = timezone.now().date()
    now = datetime.combine(today - timedelta(days=days_ago), time(12), tzinfo=timezone.UTC)
    return junit_ingest(suite=suite, body=junit_xml(*CASES), actor="ci", now=now,
                        query={"commit": commit}).file


@pytest.fixture
def history(suite):
    """Files 0, 29, 30 and 45 days old, each its own commit; and commit c45 uploaded
    again today, so its job's counts were touched today."""
    files = {days: upload(suite, days, f"c{days}") for days in (0, 29, 30, 45)}
    junit_ingest(suite=suite, body=junit_xml(*CASES), actor="ci",
                 query={"commit": "c45", "attempt": 2})
    return files


def prune_command(*args) -> str:
    out = StringIO()
    call_command("prune_junit", *args, stdout=out)
    return out.getvalue()


def kept() -> tuple:
    return (
        sorted(JUnitFile.objects.filter(results__isnull=False).distinct()
               .values_list("commit", "attempt")),
        sorted(JobOutcome.objects.values_list("run__commit", flat=True).distinct()),
    )


def test_the_default_is_thirty_days():
    assert settings.JUNIT_RETENTION_DAYS == 30


def test_rows_older_than_the_retention_are_deleted_and_the_rest_kept(history):
    rollups = (JUnitFile.objects.count(), NodeDay.objects.count(), SignatureDay.objects.count())
    assert prune_command() == (
        "Deleted 4 testcase results and 2 job counts older than 30 days.\n")
    assert kept() == ([("c0", 1), ("c29", 1), ("c45", 2)], ["c0", "c29", "c45"])
    # The files (a duplicate upload's answer) and the page's rollups stay.
    assert (JUnitFile.objects.count(), NodeDay.objects.count(),
            SignatureDay.objects.count()) == rollups
    assert prune_command() == (
        "Deleted 0 testcase results and 0 job counts older than 30 days.\n")


def test_a_dry_run_counts_and_deletes_nothing(history):
    before = (CaseResult.objects.count(), JobOutcome.objects.count())
    assert prune_command("--dry-run") == (
        "Would delete 4 testcase results and 2 job counts older than 30 days.\n")
    assert (CaseResult.objects.count(), JobOutcome.objects.count()) == before


def test_the_retention_is_the_setting(history, settings):
    settings.JUNIT_RETENTION_DAYS = 1
    assert prune_command() == "Deleted 6 testcase results and 4 job counts older than 1 day.\n"
    assert kept() == ([("c0", 1), ("c45", 2)], ["c0", "c45"])


def test_chunks_of_any_size_delete_the_same(history, monkeypatch):
    monkeypatch.setattr(prune, "FILES_CHUNK", 1)
    monkeypatch.setattr(prune, "CHUNK", 1)
    prune_command()
    assert kept() == ([("c0", 1), ("c29", 1), ("c45", 2)], ["c0", "c29", "c45"])


def test_a_chunk_of_job_counts_is_deleted_by_its_bounds_each_suite_under_its_own(
        suite, other_suite, monkeypatch):
    """Expired runs of two suites, their keys interleaved: chunks of 50 counts, each deleted
    by a statement of the same size whatever the chunk's, by each suite's share."""
    many = [("tests.test_m", f"test_{i:02d}", "passed") for i in range(40)]
    for commit in ("c1", "c2"):
        for owner in (suite, other_suite):
            junit_ingest(suite=owner, body=junit_xml(*many), actor="ci", query={
                "commit": commit}, now=timezone.now() - timedelta(days=45))
    upload(suite, 0, "c0")
    monkeypatch.setattr(prune, "CHUNK", 50)
    with CaptureQueriesContext(connection) as queries:
        assert prune_command() == (
            "Deleted 160 testcase results and 160 job counts older than 30 days.\n")
    deletes = [q["sql"] for q in queries if q["sql"].startswith('DELETE FROM "junit_joboutcome"')
               and ">=" in q["sql"]]  # not the runs' own delete, which finds none left
    # Runs of 40 counts, the suites' in turn: chunks of 50, 50, 50 and 10 counts, the first
    # three each across two suites' runs.
    assert len(deletes) == 7
    # One statement whatever the chunk holds: they differ in their numbers only.
    assert len({re.sub(r"\d+", "N", sql) for sql in deletes}) == 1
    assert kept() == ([("c0", 1)], ["c0"])


def test_a_duplicate_of_a_pruned_file_still_answers(suite, history):
    prune_command()
    again = junit_ingest(suite=suite, body=junit_xml(*CASES), actor="ci",
                         query={"commit": "c30"})
    assert again.duplicate and again.file == history[30]
    assert (again.file.testcases, again.file.failed) == (2, 1)
