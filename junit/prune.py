"""Raw JUnit rows are kept JUNIT_RETENTION_DAYS days, today included: the testcase results
of older files (``CaseResult``, which are also their jobs' counts) are deleted, and the
summary of each suite's last days is moved to today (``junit.summary``). The files
themselves (their counts and findings, which a duplicate upload answers from) and the
per-day rollups the flaky-tests page reads are kept.

On PostgreSQL the results of a day are a partition of their own (``junit.partitions``): the
partitions of the days past the retention are dropped whole, their rows counted first. Their
files are exactly the expired files, since a result's day is its file's (the upload writes
both from its one ``now``). On SQLite, deleting goes in chunks of files, each its own
transaction under its suite's write lock, so a backlog never holds one long lock, and an
interrupted prune leaves nothing half done. Pruning twice deletes nothing the second time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from django.db.models import Exists, OuterRef

from flakeboard.rules import retention_window
from ledger.locks import delete_in_chunks
from ledger.predicates import window_q

from . import partitions
from .models import CaseResult, JUnitFile
from .summary import roll_summaries

FILES_CHUNK = 100  # files whose results one transaction deletes


@dataclass(frozen=True)
class Pruned:
    results: int


def _expired_files(days: int, today: date):
    """Older files that still hold results (their ``(file, position)`` index finds them)."""
    return JUnitFile.objects.exclude(window_q("day", retention_window(days), today)).filter(
        Exists(CaseResult.objects.filter(file=OuterRef("pk"))))


def _prune_results(days: int, today: date, dry_run: bool) -> int:
    """Drop (or count) the expired days' partitions on PostgreSQL; delete (or count) the
    expired files' results in chunks on SQLite."""
    if partitions.partitioned():
        first_kept = retention_window(days).bounds(today)[0]
        expired = [day for day in partitions.partition_days() if day < first_kept]
        if dry_run:
            return partitions.rows_of(expired)
        return sum(partitions.drop_partition(day) for day in expired)
    files = _expired_files(days, today)
    if dry_run:
        return CaseResult.objects.filter(file__in=files).count()
    return delete_in_chunks(
        files, FILES_CHUNK, lambda _, pks: CaseResult.objects.filter(file_id__in=pks).delete()[0])


def prune_junit(*, days: int, today: date, dry_run: bool = False) -> Pruned:
    """Delete (or with ``dry_run`` only count) the raw rows older than ``days`` days."""
    results = _prune_results(days, today, dry_run)
    if dry_run:
        return Pruned(results)
    # Run daily: each suite's summary of its last days moves to today here, so that the
    # day's first upload need not rebuild it under the suite's lock.
    roll_summaries(today)
    return Pruned(results)
