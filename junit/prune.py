"""Raw JUnit rows are kept JUNIT_RETENTION_DAYS days, today included: the testcase results
of older files (``CaseResult``), and the per-commit counts of jobs no upload has touched
since (``JobOutcome``), are deleted, and the summary of each suite's last days is moved to
today (``junit.summary``). The files themselves (their counts and findings, which
a duplicate upload answers from) and the per-day rollups the flaky-tests page reads are
kept.

Deleting goes in chunks, each its own transaction under its suite's write lock, so a
backlog never holds one long lock, and an interrupted prune leaves nothing half done.
Pruning twice deletes nothing the second time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from django.db.models import Exists, OuterRef

from flakeboard.rules import retention_window
from ledger.locks import delete_in_chunks
from ledger.predicates import window_q

from .models import CaseResult, JobOutcome, JUnitFile
from .summary import roll_summaries

FILES_CHUNK = 100  # files whose results one transaction deletes
CHUNK = 10_000  # job counts one transaction deletes


@dataclass(frozen=True)
class Pruned:
    results: int
    job_outcomes: int


def _expired_files(days: int, today: date):
    """Older files that still hold results (their ``(file, position)`` index finds them)."""
    return JUnitFile.objects.exclude(window_q("day", retention_window(days), today)).filter(
        Exists(CaseResult.objects.filter(file=OuterRef("pk"))))


def _expired_counts(days: int, today: date):
    return JobOutcome.objects.exclude(window_q("last_day", retention_window(days), today))


def prune_junit(*, days: int, today: date, dry_run: bool = False) -> Pruned:
    """Delete (or with ``dry_run`` only count) the raw rows older than ``days`` days."""
    files, counts = _expired_files(days, today), _expired_counts(days, today)
    if dry_run:
        return Pruned(CaseResult.objects.filter(file__in=files).count(), counts.count())
    results = delete_in_chunks(
        files, FILES_CHUNK, lambda _, pks: CaseResult.objects.filter(file_id__in=pks).delete()[0])
    job_outcomes = delete_in_chunks(
        counts, CHUNK, lambda _, pks: JobOutcome.objects.filter(pk__in=pks).delete()[0])
    # Run daily: each suite's summary of its last days moves to today here, so that the
    # day's first upload need not rebuild it under the suite's lock.
    roll_summaries(today)
    return Pruned(results, job_outcomes)
