"""Detection: a file's tests added to the rollups, and what they show on the commit.

Runs inside the upload's transaction, under the suite's lock, for a file that is not an
infrastructure failure. It reads only rows of the upload's own commit (its job's, and
the other jobs' failing ones and, for the tests that failed here, passing ones) and of the
day, so its cost follows the file's size, never the history's. The rules are
``junit.rules`` (``is_flaky``, ``commit_finding``); this module counts.

- ``JobOutcome``: each test's passes and failures in this job of this commit (its
  ``JobRun``, made by the job's first file and moved to the day of its latest), over its
  attempts. A test becomes flaky in the job when its counts first hold a pass and a
  failure; the job's failures so far then count as flaky failures, and so does every
  later one.
- A test is newly flaky on the commit when it becomes flaky in this job and no other job
  of the commit had it flaky: ``NodeDay.flaky_commits`` counts it once.
- ``NodeDay`` and ``SignatureDay`` gain the file's runs, failures, flaky failures and
  failure signatures, on the upload's day and branch; the summary of the tests' last
  days gains them too (``junit.summary``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date

from django.db import connection
from django.db.models import FilteredRelation, Q

from flakeboard.rules.summary import DayCounts
from ledger.models import Suite
from web.bulk import counts_added, insert_plain, plain_rows, update_rows

from .models import JobOutcome, JobRun, NodeDay, SignatureDay
from .rules import CaseOutcome, CommitFinding, commit_finding, is_flaky
from .summary import summary_add

CHUNK = 5000
JOB_COLUMNS = ("run_id", "node_id", "passes", "failures", "flaky", "last_day")
DAY_COUNTS = ("runs", "failures", "flaky_failures", "flaky_commits")


@dataclass(frozen=True)
class FileContext:
    """Where a file's results belong: its suite, commit, job, branch and day."""

    suite: Suite
    commit: str
    job: str
    branch: str
    day: date


@dataclass(frozen=True)
class Findings:
    newly_flaky: list[int]  # node primary keys, in the file's order
    differs_by_job: list[int]


def _rows(queryset, *names) -> list[tuple]:
    return list(plain_rows(queryset.values_list(*names), CHUNK))


@dataclass(frozen=True)
class CommitRuns:
    """The upload's job run (its primary key and last day; None before the job's first
    file), its counts so far ({node: (passes, failures, flaky)}), and the commit's other
    runs (primary keys)."""

    run: int | None
    last_day: date | None
    counts: dict[int, tuple]
    others: list[int]


def _commit_runs(upload: FileContext) -> CommitRuns:
    """The commit's runs, read with the counts of the upload's job in one query."""
    mine = FilteredRelation("outcomes", condition=Q(job=upload.job))
    runs = JobRun.objects.filter(suite=upload.suite, commit=upload.commit).annotate(mine=mine)
    run, last_day, counts, others = None, None, {}, set()
    for pk, job, run_day, node, *count in _rows(
            runs, "pk", "job", "last_day", "mine__node_id", "mine__passes", "mine__failures",
            "mine__flaky"):
        if job != upload.job:
            others.add(pk)
            continue
        run, last_day = pk, run_day
        if node is not None:
            counts[node] = tuple(count)
    return CommitRuns(run, last_day, counts, sorted(others))


def _job_outcomes(upload: FileContext, runs: CommitRuns, results: dict[int, CaseOutcome]):
    """This job's counts with the file's added: {node: (passes, failures, became flaky,
    flaky failures added)}, written back. The job's run is made by its first file with a
    test that ran, and moved to the day of each later one (never back)."""
    day = connection.ops.adapt_datefield_value(upload.day)
    after, updates, inserts = {}, [], []
    for node, result in results.items():
        known = node in runs.counts
        passes, failures, was_flaky = runs.counts.get(node, (0, 0, False))
        passes, failures = passes + result.passes, failures + result.failures
        flaky = is_flaky(passes, failures)
        became = flaky and not was_flaky
        after[node] = (passes, failures, became,
                       failures if became else result.failures if flaky else 0)
        if known:
            updates.append((passes, failures, flaky, day, runs.run, node))
        else:
            inserts.append((node, passes, failures, flaky, day))
    run = runs.run
    if run is None and inserts:
        run = JobRun.objects.create(suite=upload.suite, commit=upload.commit, job=upload.job,
                                    last_day=upload.day).pk
    elif run is not None and runs.last_day < upload.day:
        JobRun.objects.filter(pk=run).update(last_day=upload.day)
    update_rows(JobOutcome, ("passes", "failures", "flaky", "last_day"), updates)
    if inserts:
        insert_plain(JobOutcome, JOB_COLUMNS, [(run, *row) for row in inserts])
    return after


def _other_jobs(runs: CommitRuns, failed_here: list[int]) -> dict[int, list[tuple]]:
    """The other jobs of the commit that could change a finding, by node: every job that
    failed a test, and for the tests that failed here, every job that passed them. No
    query when the commit has no other run."""
    if not runs.others:
        return {}
    others = JobOutcome.objects.filter(run_id__in=runs.others)
    failing = Q(failures__gt=0)
    passing = [Q(passes__gt=0, node_id__in=failed_here[start : start + CHUNK])
               for start in range(0, len(failed_here), CHUNK)]
    rows = {}
    # The failing jobs read with the first chunk's passing ones: one query for a file of
    # up to CHUNK tests that failed here.
    for wanted in [failing | passing[0], *passing[1:]] if passing else [failing]:
        rows.update(((run, node), (node, passes, failures)) for run, node, passes, failures
                    in _rows(others.filter(wanted), "run_id", "node_id", "passes", "failures"))
    jobs = defaultdict(list)
    for node, passes, failures in rows.values():
        jobs[node].append((passes, failures))
    return jobs


def _findings(jobs: dict, others: dict) -> Findings:
    """The tests newly flaky on the commit, and those that differ by job, in file order."""
    newly, differs = [], []
    for node, (passes, failures, became, _) in jobs.items():
        elsewhere = others.get(node, [])
        if became and not any(is_flaky(p, f) for p, f in elsewhere):
            newly.append(node)
        elif elsewhere and commit_finding(
                [(passes, failures), *elsewhere]) is CommitFinding.DIFFERS_BY_JOB:
            differs.append(node)
    return Findings(newly, differs)


def _add_day(upload: FileContext, ran: dict[int, CaseOutcome], jobs: dict,
             newly: set[int], signatures: dict[int, str]) -> None:
    """The day's rollups of the upload's branch: each test's runs, failures, flaky
    failures and flaky commits, and its failures by signature."""
    fixed = {"suite_id": upload.suite.pk, "day": connection.ops.adapt_datefield_value(
        upload.day), "branch": upload.branch}
    added = {node: DayCounts(r.passes + r.failures, r.failures, jobs[node][3],
                             int(node in newly)) for node, r in ran.items()}
    counts_added(NodeDay, fixed=fixed, key=("node_id",), counts=DAY_COUNTS, rows=[
        (node, c.runs, c.failures, c.flaky_failures, c.flaky_commits)
        for node, c in added.items()])
    failing = defaultdict(int)
    for node, r in ran.items():
        if r.failures:
            failing[node, signatures[node]] += r.failures
    counts_added(SignatureDay, fixed=fixed, key=("node_id", "signature"),
                 counts=("failures",), rows=[(*k, count) for k, count in failing.items()])
    summary_add(upload.suite, upload.day, added, failing)


def detect(upload: FileContext, results: dict[int, CaseOutcome],
           signatures: dict[int, str]) -> Findings:
    """Add a file's results ({node: its merged attempts}, in the file's order, with each
    failing one's signature) to the rollups; answer the tests newly flaky on the commit
    and those that differ by job."""
    ran = {node: r for node, r in results.items() if r.ran}
    runs = _commit_runs(upload)
    jobs = _job_outcomes(upload, runs, ran)
    others = _other_jobs(runs, [n for n, (p, f, _, _) in jobs.items() if f and not p])
    findings = _findings(jobs, others)
    _add_day(upload, ran, jobs, set(findings.newly_flaky), signatures)
    return findings
