"""A job's counts belong to its run (``JobRun``: a suite's commit and job, stored once), which
its first file makes and each later file moves to its day, never back. The prune deletes
the runs whose last file came before the window, with their counts, and keeps a run seen
inside it whole. Migration junit 0010 made the runs from the counts that held their commit
and job themselves."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from junit.ingest import junit_ingest
from junit.models import JobOutcome, JobRun
from junit.prune import prune_junit
from tests.junit_files import junit_xml

BEFORE = ("junit", "0009_case_results_partitioned_by_day")
AFTER = ("junit", "0010_job_outcomes_keyed_by_job_run")
OK, BAD = ("tests.test_a", "test_ok", "passed"), ("tests.test_a", "test_bad", "failed")


def upload(suite, commit: str, job: str = "", attempt: int = 1, age: int = 0,
           cases=(OK, BAD)):
    """A file of ``cases`` uploaded ``age`` days ago."""
    now = datetime.combine(days_ago(age), time(12), tzinfo=timezone.UTC)
    return junit_ingest(suite=suite, body=junit_xml(*cases), actor="ci", now=now,
                        query={"commit": commit, "job": job, "attempt": attempt}).file


def runs() -> list[tuple]:
    return sorted(JobRun.objects.values_list("commit", "job", "last_day"))


def counts() -> list[tuple]:
    return sorted(JobOutcome.objects.values_list("run__commit", "run__job", "node__nodeid",
                                                 "passes", "failures", "last_day"))


def days_ago(days: int) -> date:
    """The board's date ``days`` days ago (its clock stands still in a test)."""
    return timezone.now().date() - timedelta(days=days)


@pytest.mark.django_db
def test_two_jobs_of_one_commit_share_no_run(suite):
    upload(suite, "c1", job="linux")
    upload(suite, "c1", job="windows")
    assert runs() == [("c1", "linux", days_ago(0)), ("c1", "windows", days_ago(0))]
    by_run = {}
    for run, job in JobOutcome.objects.values_list("run_id", "run__job"):
        by_run.setdefault(run, set()).add(job)
    assert sorted(map(sorted, by_run.values())) == [["linux"], ["windows"]]


@pytest.mark.django_db
def test_a_later_attempt_of_a_job_keeps_its_run_and_moves_its_day_forward(suite):
    upload(suite, "c1", job="linux", age=3)
    (run,) = JobRun.objects.values_list("pk", flat=True)
    upload(suite, "c1", job="linux", attempt=2, age=1, cases=[OK])
    assert list(JobRun.objects.values_list("pk", "last_day")) == [(run, days_ago(1))]
    # Each test's own day is its last file's: test_bad was not in the second attempt.
    assert counts() == [("c1", "linux", "tests/test_a.py::test_bad", 0, 1, days_ago(3)),
                        ("c1", "linux", "tests/test_a.py::test_ok", 2, 0, days_ago(1))]


@pytest.mark.django_db
def test_a_file_of_an_earlier_day_does_not_move_its_run_back(suite):
    upload(suite, "c1", job="linux", age=1)
    upload(suite, "c1", job="linux", attempt=2, age=5)
    assert runs() == [("c1", "linux", days_ago(1))]
    assert [row[3:5] for row in counts()] == [(0, 2), (2, 0)]


@pytest.mark.django_db
def test_a_file_of_no_test_that_ran_makes_no_run(suite):
    upload(suite, "c1", cases=[("tests.test_a", "test_later", "skipped")])
    assert runs() == [] and counts() == []


@pytest.mark.django_db
def test_the_prune_deletes_expired_runs_and_keeps_a_run_seen_in_the_window_whole(suite, today):
    upload(suite, "old", age=45)
    upload(suite, "again", age=45)
    # Seen today, with one test of the two: the other's own day is 45 days old.
    upload(suite, "again", attempt=2, cases=[OK])
    upload(suite, "new", age=29)
    assert prune_junit(days=30, today=today, dry_run=True).job_outcomes == 2
    assert len(counts()) == 6
    assert prune_junit(days=30, today=today).job_outcomes == 2
    assert runs() == [("again", "", days_ago(0)), ("new", "", days_ago(29))]
    assert [row[:3] for row in counts()] == [
        ("again", "", "tests/test_a.py::test_bad"), ("again", "", "tests/test_a.py::test_ok"),
        ("new", "", "tests/test_a.py::test_bad"), ("new", "", "tests/test_a.py::test_ok")]
    assert prune_junit(days=30, today=today).job_outcomes == 0


def run_statements(captured) -> tuple[int, int]:
    """The reads of the job runs or their counts, and the runs made, that ``captured`` saw."""
    sqls = [q["sql"] for q in captured.captured_queries]
    reads = [sql for sql in sqls if sql.startswith("SELECT")
             and ("junit_jobrun" in sql or "junit_joboutcome" in sql)]
    made = [sql for sql in sqls if sql.startswith('INSERT INTO "junit_jobrun"')]
    return len(reads), len(made)


@pytest.mark.django_db
def test_an_upload_reads_its_commits_runs_once_and_other_jobs_only_when_there_are(suite):
    with CaptureQueriesContext(connection) as first:
        upload(suite, "c1", job="linux")
    # The commit's runs with the job's counts, read in one query; the run made.
    assert run_statements(first) == (1, 1)
    with CaptureQueriesContext(connection) as attempt:
        upload(suite, "c1", job="linux", attempt=2)
    assert run_statements(attempt) == (1, 0)
    with CaptureQueriesContext(connection) as other:
        upload(suite, "c1", job="windows")
    # The other job's counts read too.
    assert run_statements(other) == (2, 1)


def old_columns() -> list[tuple]:
    """The counts as the table held them before the runs: each its suite, commit and job."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT s.slug, o.\"commit\", o.job, n.nodeid, o.passes, o.failures "
                       "FROM junit_joboutcome o JOIN ledger_suite s ON s.id = o.suite_id "
                       "JOIN ledger_node n ON n.id = o.node_id")
        return sorted(cursor.fetchall())


@pytest.mark.django_db(transaction=True)
def test_the_migration_makes_a_run_per_commit_and_job_and_keeps_the_counts(suite,
                                                                           other_suite):
    upload(suite, "c1", job="linux", age=2)
    upload(suite, "c1", job="linux", attempt=2, age=1, cases=[OK])
    upload(suite, "c1", job="windows", age=1)
    upload(other_suite, "c1", job="linux", age=3)
    before = counts()
    by_suite = sorted(JobOutcome.objects.values_list(
        "run__suite__slug", "run__commit", "run__job", "node__nodeid", "passes", "failures"))
    assert len(by_suite) == 6
    executor = MigrationExecutor(connection)
    try:
        executor.migrate([BEFORE])
        # Backwards, each count took its suite, commit and job from its run.
        assert old_columns() == by_suite
        # A count whose suite is gone (deleted without Django) has no run to go to.
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO junit_joboutcome (suite_id, node_id, \"commit\", job, "
                           "passes, failures, flaky, last_day) SELECT %s, node_id, \"commit\", "
                           "job, passes, failures, flaky, last_day FROM junit_joboutcome "
                           "WHERE suite_id = %s", [other_suite.pk + 1000, other_suite.pk])
        executor = MigrationExecutor(connection)
        executor.migrate([AFTER])
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert sorted(JobRun.objects.values_list("suite__slug", "commit", "job", "last_day")) == (
        sorted([(other_suite.slug, "c1", "linux", days_ago(3)),
                (suite.slug, "c1", "linux", days_ago(1)),
                (suite.slug, "c1", "windows", days_ago(1))]))
    assert counts() == before
    assert sorted(JobOutcome.objects.values_list(
        "run__suite__slug", "run__commit", "run__job", "node__nodeid", "passes",
        "failures")) == by_suite
