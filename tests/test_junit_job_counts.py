"""A job's counts are its files' results (``junit.detect``): each test's passes and
failures over the files of one job of one commit that detection counted (its attempts,
reruns and shards), the infrastructure failures left out, and only while the prune keeps
them. An upload reads the results of its commit's earlier files alone, and writes no count
of its own. Migration junit 0013 dropped the counts the jobs kept (``JobOutcome``, with
their ``JobRun``); backwards, it makes them again from the results."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from junit.ingest import junit_ingest
from junit.models import CaseResult, NodeDay
from junit.prune import prune_junit
from tests.junit_files import job_counts, junit_xml, migrated_back

pytestmark = pytest.mark.django_db
DROPPED = ("junit", "0012_node_day_fillfactor")
OK, BAD = ("tests.test_a", "test_ok", "passed"), ("tests.test_a", "test_bad", "failed")
GOOD = ("tests.test_a", "test_bad", "passed")
LATER = ("tests.test_a", "test_later", "skipped")
# pytest's own error outside any test: an infrastructure failure, whatever its tests did.
BROKEN = (("pytest", "internal", "error"), BAD)


def upload(suite, commit: str, job: str = "", attempt: int = 1, age: int = 0,
           cases=(OK, BAD)):
    """A file of ``cases`` uploaded ``age`` days ago."""
    now = datetime.combine(days_ago(age), time(12), tzinfo=timezone.UTC)
    return junit_ingest(suite=suite, body=junit_xml(*cases), actor="ci", now=now,
                        query={"commit": commit, "job": job, "attempt": attempt}).file


def days_ago(days: int) -> date:
    """The board's date ``days`` days ago (its clock stands still in a test)."""
    return timezone.now().date() - timedelta(days=days)


def counts() -> list[tuple]:
    """(commit, job, test, passes, failures, flaky, last day) of every job's counts."""
    return [(commit, job, nodeid.rpartition("::")[2], *rest)
            for _, commit, job, nodeid, *rest in job_counts()]


def test_two_jobs_of_one_commit_count_apart(suite):
    upload(suite, "c1", job="linux")
    upload(suite, "c1", job="windows", cases=[OK])
    today = days_ago(0)
    assert counts() == [("c1", "linux", "test_bad", 0, 1, False, today),
                        ("c1", "linux", "test_ok", 1, 0, False, today),
                        ("c1", "windows", "test_ok", 1, 0, False, today)]


def test_the_attempts_of_a_job_add_up_each_test_to_its_last_day(suite):
    upload(suite, "c1", job="linux", age=3)
    file = upload(suite, "c1", job="linux", attempt=2, age=1, cases=[OK, GOOD])
    assert file.newly_flaky == ["tests/test_a.py::test_bad"]
    upload(suite, "c1", job="linux", attempt=3, age=1, cases=[OK])
    assert counts() == [("c1", "linux", "test_bad", 1, 1, True, days_ago(1)),
                        ("c1", "linux", "test_ok", 3, 0, False, days_ago(1))]


def test_a_jobs_flaky_failures_are_added_by_the_file_that_makes_it_flaky_and_after(suite):
    """The file that makes a test flaky in its job adds the job's failures so far, each
    later one its own failures; the days' rollups count the same."""
    upload(suite, "c1", job="linux", cases=[BAD])
    upload(suite, "c1", job="linux", attempt=2, cases=[BAD])
    upload(suite, "c1", job="linux", attempt=3, cases=[GOOD])
    upload(suite, "c1", job="linux", attempt=4, cases=[BAD])
    upload(suite, "c1", job="windows", cases=[BAD])
    added = CaseResult.objects.order_by("file_id").values_list("flaky_failures", flat=True)
    assert list(added) == [0, 0, 2, 1, 0]
    assert [row[-1] for row in job_counts(flaky_failures=True)] == [3, 0]
    assert NodeDay.objects.get().flaky_failures == 3


def test_a_test_that_did_not_run_has_no_counts(suite):
    upload(suite, "c1", cases=[LATER])
    assert counts() == []


def test_an_infrastructure_failure_is_not_among_its_jobs_counts(suite):
    broken = upload(suite, "c1", job="linux", cases=BROKEN)
    assert broken.infrastructure
    retried = upload(suite, "c1", job="linux", attempt=2, cases=[GOOD])
    # Its failure of test_bad would have made the retry flaky.
    assert retried.newly_flaky == []
    assert counts() == [("c1", "linux", "test_bad", 1, 0, False, days_ago(0))]


def test_another_jobs_counts_are_over_all_its_files(suite):
    """windows passed test_bad, then failed it: flaky in windows. linux passing it makes
    the commit flaky in one job, not one that differs by job, which windows's failing file
    alone would say."""
    upload(suite, "c1", job="windows", cases=[GOOD])
    assert upload(suite, "c1", job="windows", attempt=2, cases=[BAD]).newly_flaky == [
        "tests/test_a.py::test_bad"]
    linux = upload(suite, "c1", job="linux", cases=[GOOD])
    assert (linux.newly_flaky, linux.differs_by_job) == ([], [])
    # The other way round: a test failing here, passed by a file of a job that also
    # failed it, is flaky there, so not newly flaky on the commit.
    upload(suite, "c2", job="windows", cases=[GOOD])
    upload(suite, "c2", job="windows", attempt=2, cases=[BAD])
    mac = upload(suite, "c2", job="mac", cases=[BAD])
    assert (mac.newly_flaky, mac.differs_by_job) == ([], [])
    differs = upload(suite, "c3", job="windows", cases=[BAD])
    assert upload(suite, "c3", job="linux", cases=[GOOD]).differs_by_job == [
        "tests/test_a.py::test_bad"]
    assert differs.differs_by_job == []


def test_a_jobs_files_past_the_retention_no_longer_count(suite, today):
    upload(suite, "old", age=45)
    upload(suite, "recent", age=29)
    prune_junit(days=30, today=today)
    assert upload(suite, "old", attempt=2, cases=[GOOD]).newly_flaky == []
    assert upload(suite, "recent", attempt=2, cases=[GOOD]).newly_flaky == [
        "tests/test_a.py::test_bad"]


def result_reads(captured) -> int:
    return sum(q["sql"].startswith("SELECT") and '"junit_caseresult"' in q["sql"]
               for q in captured.captured_queries)


def test_an_upload_reads_results_only_of_its_commits_earlier_files(suite):
    upload(suite, "c0", job="linux")  # another commit's: never read
    with CaptureQueriesContext(connection) as first:
        upload(suite, "c1", job="linux")
    assert result_reads(first) == 0
    with CaptureQueriesContext(connection) as attempt:
        upload(suite, "c1", job="linux", attempt=2)
    assert result_reads(attempt) == 1  # its job's counts
    with CaptureQueriesContext(connection) as other:
        upload(suite, "c1", job="windows")
    assert result_reads(other) == 1  # the other job's, whose tests failed
    with CaptureQueriesContext(connection) as both:
        upload(suite, "c1", job="windows", attempt=2)
    assert result_reads(both) == 2


@pytest.mark.django_db(transaction=True)
def test_the_migration_back_makes_each_jobs_counts_from_its_results(suite, other_suite):
    upload(suite, "c1", job="linux", age=2)
    upload(suite, "c1", job="linux", attempt=2, age=1, cases=[OK, GOOD])
    upload(suite, "c1", job="windows", age=1)
    upload(suite, "c1", job="mac", cases=BROKEN)
    upload(suite, "c2", job="linux", cases=[LATER])
    upload(other_suite, "c1", job="linux", age=3)
    expected = job_counts(flaky_failures=True)
    assert len(expected) == 6 and sum(row[-1] for row in expected) == 1
    with migrated_back(DROPPED) as apps:
        runs = apps.get_model("junit", "JobRun").objects
        kept = apps.get_model("junit", "JobOutcome").objects
        # A run a commit and job with a test that ran, its day its last file's.
        assert sorted(runs.values_list("suite__slug", "commit", "job", "last_day")) == sorted(
            [(suite.slug, "c1", "linux", days_ago(1)), (suite.slug, "c1", "windows",
                                                        days_ago(1)),
             (other_suite.slug, "c1", "linux", days_ago(3))])
        assert sorted(kept.values_list(
            "run__suite__slug", "run__commit", "run__job", "node__nodeid", "passes",
            "failures", "flaky", "last_day")) == [row[:-1] for row in expected]
    with connection.cursor() as cursor:
        assert not {"junit_joboutcome", "junit_jobrun"} & set(
            connection.introspection.table_names(cursor))
    # Forwards, a flaky count's failures go to one of its results.
    assert job_counts(flaky_failures=True) == expected
