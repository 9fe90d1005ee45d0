"""Raw JUnit rows are kept JUNIT_RETENTION_DAYS days (30 by default), today included;
``manage.py prune_junit [--dry-run]`` deletes older ones, in chunks, idempotently. The
files' counts and the per-day rollups stay."""

from __future__ import annotations

from datetime import datetime, time, timedelta
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from junit import prune
from junit.ingest import junit_ingest
from junit.models import CaseResult, JUnitFile, NodeDay, SignatureDay
from tests.junit_files import job_counts, junit_xml

CASES = [("tests.test_a", "test_ok", "passed"), ("tests.test_a", "test_bad", "failed")]


def upload(suite, days_ago: int, commit: str):
    today = timezone.now().date()
    now = datetime.combine(today - timedelta(days=days_ago), time(12), tzinfo=timezone.UTC)
    return junit_ingest(suite=suite, body=junit_xml(*CASES), actor="ci", now=now,
                        query={"commit": commit}).file


@pytest.fixture
def history(suite):
    """Files 0, 29, 30 and 45 days old, each its own commit; and commit c45 uploaded
    again today."""
    files = {days: upload(suite, days, f"c{days}") for days in (0, 29, 30, 45)}
    junit_ingest(suite=suite, body=junit_xml(*CASES), actor="ci",
                 query={"commit": "c45", "attempt": 2})
    return files


def prune_command(*args) -> str:
    out = StringIO()
    call_command("prune_junit", *args, stdout=out)
    return out.getvalue()


def kept() -> list[tuple]:
    """The files that still hold results; a job's counts are its files' results."""
    files = sorted(JUnitFile.objects.filter(results__isnull=False).distinct()
                   .values_list("commit", "attempt"))
    assert sorted({commit for _, commit, *_ in job_counts()}) == sorted(
        {commit for commit, _ in files})
    return files


def test_the_default_is_thirty_days():
    assert settings.JUNIT_RETENTION_DAYS == 30


def test_rows_older_than_the_retention_are_deleted_and_the_rest_kept(history):
    rollups = (JUnitFile.objects.count(), NodeDay.objects.count(), SignatureDay.objects.count())
    assert prune_command() == (
        "Deleted 4 testcase results older than 30 days.\n")
    assert kept() == [("c0", 1), ("c29", 1), ("c45", 2)]
    # The files (a duplicate upload's answer) and the page's rollups stay.
    assert (JUnitFile.objects.count(), NodeDay.objects.count(),
            SignatureDay.objects.count()) == rollups
    assert prune_command() == (
        "Deleted 0 testcase results older than 30 days.\n")


def test_a_dry_run_counts_and_deletes_nothing(history):
    before = CaseResult.objects.count()
    assert prune_command("--dry-run") == "Would delete 4 testcase results older than 30 days.\n"
    assert CaseResult.objects.count() == before


def test_the_retention_is_the_setting(history, settings):
    settings.JUNIT_RETENTION_DAYS = 1
    assert prune_command() == "Deleted 6 testcase results older than 1 day.\n"
    assert kept() == [("c0", 1), ("c45", 2)]


def test_chunks_of_any_size_delete_the_same(history, monkeypatch):
    monkeypatch.setattr(prune, "FILES_CHUNK", 1)
    prune_command()
    assert kept() == [("c0", 1), ("c29", 1), ("c45", 2)]


def test_a_duplicate_of_a_pruned_file_still_answers(suite, history):
    prune_command()
    again = junit_ingest(suite=suite, body=junit_xml(*CASES), actor="ci",
                         query={"commit": "c30"})
    assert again.duplicate and again.file == history[30]
    assert (again.file.testcases, again.file.failed) == (2, 1)
