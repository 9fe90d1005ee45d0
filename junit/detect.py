"""Detection: a file's tests added to the rollups, and what they show on the commit.

Runs inside the upload's transaction, under the suite's lock, for a file that is not an
infrastructure failure. It reads only rows of the upload's own commit (its job's, and
the other jobs' failing ones and, for the tests that failed here, passing ones) and of the
day, so its cost follows the file's size, never the history's. The rules are
``junit.rules`` (``is_flaky``, ``commit_finding``); this module counts.

- A job's counts are its results: each test's passes and failures summed over the files
  of this job of this commit (its attempts, reruns and shards) that detection counted
  before this one, the infrastructure failures left out. The upload reads them from the
  raw rows (``CaseResult``) of those files alone, for its own tests, and writes nothing
  for them. A test becomes flaky in the job when its counts first hold a pass and a
  failure; the job's failures so far then count as flaky failures, and so does every
  later one.
- A test is newly flaky on the commit when it becomes flaky in this job and no other job
  of the commit had it flaky: ``NodeDay.flaky_commits`` counts it once.
- ``NodeDay`` and ``SignatureDay`` gain the file's runs, failures, flaky failures and
  failure signatures, on the upload's day and branch; the summary of the tests' last
  days gains them too (``junit.summary``).

A job's files older than the raw rows' retention (``junit.prune``) no longer count: a
job's attempts come within days.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date

from django.db import connection
from django.db.models import Q, Sum

from flakeboard.rules.summary import DayCounts
from ledger.models import Suite
from web.bulk import counts_added, plain_rows

from .models import CaseResult, JUnitFile, NodeDay, SignatureDay
from .rules import CaseOutcome, CommitFinding, commit_finding, is_flaky
from .summary import summary_add

CHUNK = 5000
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
    # The flaky failures the file adds to its tests' job, by node (those with some): its
    # own failures in a job flaky in the test, and when the file makes it flaky, the
    # job's failures so far. Stored with its results, they sum to the job's.
    flaky_failures: dict[int, int] = field(default_factory=dict)


def _rows(queryset, *names) -> list[tuple]:
    return list(plain_rows(queryset.values_list(*names), CHUNK))


def _chunks(nodes: list[int]) -> list[list[int]]:
    return [nodes[start : start + CHUNK] for start in range(0, len(nodes), CHUNK)]


@dataclass(frozen=True)
class CommitFiles:
    """The commit's files that detection counted before this one, by primary key with
    their job and day: the upload's job's, and the other jobs'."""

    mine: dict[int, tuple[str, date]]
    others: dict[int, tuple[str, date]]


def _commit_files(upload: FileContext) -> CommitFiles:
    mine, others = {}, {}
    counted = JUnitFile.objects.filter(suite=upload.suite, commit=upload.commit,
                                       infrastructure_reason="").order_by()
    for pk, job, day in counted.values_list("pk", "job", "day"):
        (mine if job == upload.job else others)[pk] = (job, day)
    return CommitFiles(mine, others)


def _results_of(files: dict[int, tuple[str, date]]):
    """The results of some of the commit's files: their days, with their keys, keep
    PostgreSQL to those days' partitions."""
    days = sorted({day for _, day in files.values()})
    return CaseResult.objects.filter(file_id__in=list(files), day__in=days).order_by()


def _job_counts(files: CommitFiles, nodes: list[int]) -> dict[int, tuple[int, int]]:
    """The upload's job's counts so far of the file's tests that ran: {node: (passes,
    failures)}. No query for the job's first file."""
    if not files.mine:
        return {}
    results = _results_of(files.mine).values("node_id")
    counts = {}
    for chunk in _chunks(nodes):
        counts.update((node, (passes, failures)) for node, passes, failures in _rows(
            results.filter(node_id__in=chunk).annotate(p=Sum("passes"), f=Sum("failures")),
            "node_id", "p", "f"))
    return counts


def _job_added(counts: dict[int, tuple[int, int]], results: dict[int, CaseOutcome]):
    """This job's counts with the file's added: {node: (passes, failures, became flaky,
    flaky failures added)}."""
    after = {}
    for node, result in results.items():
        passes_before, failures_before = counts.get(node, (0, 0))
        passes, failures = passes_before + result.passes, failures_before + result.failures
        flaky = is_flaky(passes, failures)
        became = flaky and not is_flaky(passes_before, failures_before)
        after[node] = (passes, failures, became,
                       failures if became else result.failures if flaky else 0)
    return after


def _other_jobs(files: CommitFiles, failed_here: list[int]) -> dict[int, list[tuple]]:
    """The other jobs of the commit that could change a finding, by node: every job that
    failed a test, and for the tests that failed here, every job that passed them, each
    as (passes, failures) over the job's files. No query when the commit has no other
    job's file."""
    if not files.others:
        return {}
    results = _results_of(files.others)
    # Every result of a test that failed in another job: a job's counts are over all its
    # files, and a file of the job may have passed it.
    failing = Q(node_id__in=results.filter(failures__gt=0).values("node_id"))
    chunks = _chunks(failed_here)
    rows = {}
    # The failing tests read with the first chunk of those that failed here: one query
    # for a file of up to CHUNK tests that failed here.
    for wanted in ([failing | Q(node_id__in=chunks[0]), *(Q(node_id__in=c) for c in chunks[1:])]
                   if chunks else [failing]):
        rows.update(((file, node), (node, passes, failures)) for file, node, passes, failures
                    in _rows(results.filter(wanted), "file_id", "node_id", "passes",
                             "failures"))
    by_job = defaultdict(lambda: [0, 0])
    for (file, _), (node, passes, failures) in rows.items():
        counts = by_job[files.others[file][0], node]
        counts[0] += passes
        counts[1] += failures
    failed, jobs = set(failed_here), defaultdict(list)
    for (_, node), (passes, failures) in by_job.items():
        if failures or (passes and node in failed):
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
    return Findings(newly, differs, {node: added for node, (*_, added) in jobs.items()
                                     if added})


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
    files = _commit_files(upload)
    jobs = _job_added(_job_counts(files, list(ran)), ran)
    others = _other_jobs(files, [n for n, (p, f, _, _) in jobs.items() if f and not p])
    findings = _findings(jobs, others)
    _add_day(upload, ran, jobs, set(findings.newly_flaky), signatures)
    return findings
