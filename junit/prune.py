"""Raw JUnit rows are kept JUNIT_RETENTION_DAYS days, today included: the testcase results
of older files (``CaseResult``), and the per-commit counts of jobs no upload has touched
since (``JobOutcome``), are deleted. The files themselves (their counts and findings, which
a duplicate upload answers from) and the per-day rollups the flaky-tests page reads are
kept.

Deleting goes in chunks, each its own transaction under its suite's write lock, so a
backlog never holds one long lock, and an interrupted prune leaves nothing half done.
Pruning twice deletes nothing the second time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from django.db import transaction
from django.db.models import Exists, OuterRef

from flakeboard import rules
from ledger.locks import lock_suite
from ledger.predicates import window_q

from .models import CaseResult, JobOutcome, JUnitFile

FILES_CHUNK = 100  # files whose results one transaction deletes
CHUNK = 10_000  # job counts one transaction deletes


def retention_window(days: int) -> rules.DayWindow:
    """The days raw rows are kept: the last ``days``, today included."""
    return rules.DayWindow(first=-(days - 1))


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


def _delete_in_chunks(chunks, delete) -> int:
    """Run ``delete(pks)`` for each suite's share of each chunk of (suite, pk), each in
    its own transaction under the suite's lock; the rows deleted."""
    deleted = 0
    while chunk := list(chunks()):
        for suite_id in sorted({suite for suite, _ in chunk}):
            with transaction.atomic():
                lock_suite(suite_id)
                deleted += delete([pk for suite, pk in chunk if suite == suite_id])
    return deleted


def prune_junit(*, days: int, today: date, dry_run: bool = False) -> Pruned:
    """Delete (or with ``dry_run`` only count) the raw rows older than ``days`` days."""
    files, counts = _expired_files(days, today), _expired_counts(days, today)
    if dry_run:
        return Pruned(CaseResult.objects.filter(file__in=files).count(), counts.count())
    results = _delete_in_chunks(
        lambda: files.order_by("pk").values_list("suite_id", "pk")[:FILES_CHUNK],
        lambda pks: CaseResult.objects.filter(file_id__in=pks).delete()[0])
    job_outcomes = _delete_in_chunks(
        lambda: counts.order_by("pk").values_list("suite_id", "pk")[:CHUNK],
        lambda pks: JobOutcome.objects.filter(pk__in=pks).delete()[0])
    return Pruned(results, job_outcomes)
