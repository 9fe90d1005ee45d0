"""Raw JUnit rows are kept JUNIT_RETENTION_DAYS days, today included: the testcase results
of older files (``CaseResult``), and the job runs no upload has touched since (``JobRun``)
with their tests' counts (``JobOutcome``), are deleted, and the summary of each suite's
last days is moved to today (``junit.summary``). The files themselves (their counts and
findings, which a duplicate upload answers from) and the per-day rollups the flaky-tests
page reads are kept.

On PostgreSQL the results of a day are a partition of their own (``junit.partitions``): the
partitions of the days past the retention are dropped whole, their rows counted first. Their
files are exactly the expired files, since a result's day is its file's (the upload writes
both from its one ``now``). On SQLite, and for the job counts and then their runs, deleting
goes in chunks, each its own transaction under its suite's write lock (a run moved into the
window meanwhile is kept, with its counts), so a backlog never holds one long lock, and an
interrupted prune leaves nothing half done. Pruning twice deletes nothing the second time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from django.db.models import Exists, F, OuterRef

from flakeboard.rules import retention_window
from ledger.locks import delete_in_chunks
from ledger.predicates import window_q

from . import partitions
from .models import CaseResult, JobOutcome, JobRun, JUnitFile
from .summary import roll_summaries

FILES_CHUNK = 100  # files whose results one transaction deletes
CHUNK = 10_000  # job counts one transaction deletes
RUNS_CHUNK = 1_000  # job runs (their counts deleted already) one transaction deletes


@dataclass(frozen=True)
class Pruned:
    results: int
    job_outcomes: int


def _expired_files(days: int, today: date):
    """Older files that still hold results (their ``(file, position)`` index finds them)."""
    return JUnitFile.objects.exclude(window_q("day", retention_window(days), today)).filter(
        Exists(CaseResult.objects.filter(file=OuterRef("pk"))))


def _expired_runs(days: int, today: date):
    """The job runs whose last file came before the window, whatever their tests' own days."""
    return JobRun.objects.exclude(window_q("last_day", retention_window(days), today))


def _prune_job_counts(days: int, today: date, dry_run: bool) -> int:
    """Delete (or count) the expired runs' counts in chunks, then the runs themselves; the
    counts deleted."""
    runs = _expired_runs(days, today)
    counts = JobOutcome.objects.filter(run__in=runs)
    if dry_run:
        return counts.count()
    # A chunk's keys, (run, node) in order, are a range: one suite's share of it is deleted
    # by its bounds (a list of 10,000 pairs would be a statement too deep to plan).
    deleted = delete_in_chunks(
        counts.annotate(suite_id=F("run__suite_id")), CHUNK,
        lambda suite, pks: counts.filter(run__suite_id=suite, pk__gte=pks[0],
                                         pk__lte=pks[-1]).delete()[0])
    # Django's delete of a run deletes its counts first: those an upload added since.
    return delete_in_chunks(runs, RUNS_CHUNK, lambda _, pks: runs.filter(pk__in=pks).delete()[1]
                            .get(JobOutcome._meta.label, 0), deleted)


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
    job_outcomes = _prune_job_counts(days, today, dry_run)
    if dry_run:
        return Pruned(results, job_outcomes)
    # Run daily: each suite's summary of its last days moves to today here, so that the
    # day's first upload need not rebuild it under the suite's lock.
    roll_summaries(today)
    return Pruned(results, job_outcomes)
