"""Detection (issue 17, Detect): a test is flaky on a commit when one job, over its
attempts and the reruns in its files, has both passed and failed it; passing in one job
and failing in another is "differs by job"; an infrastructure failure is stored and left
out. The rollups keep the counts, whatever order the uploads come in, and the gate never
hears of any of it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from junit.answers import summary as junit_summary
from junit.ingest import junit_ingest
from junit.models import CaseResult, JUnitFile, NodeDay, SignatureDay
from junit.rules import CommitFinding, commit_finding
from ledger.models import Node
from ledger.selectors import share_figures
from runs.ingest import report_ingest
from tests.helpers import body, measurement
from tests.junit_files import job_counts as counted_jobs
from tests.junit_files import junit_xml
from tests.properties import db_property, rolled_back

A, B = "tests/test_a.py::test_a", "tests/test_a.py::test_b"


def case(name: str, outcome: str, message: str = "boom") -> tuple:
    return ("tests.test_a", name.rpartition("::")[2], outcome, message)


def upload(suite, *cases, commit="c1", job="", attempt=1, branch="main", xml=None):
    xml = xml or junit_xml(*cases)
    query = {"commit": commit, "job": job, "attempt": attempt, "branch": branch}
    return junit_ingest(suite=suite, body=xml, actor="ci", query=query).file


def job_counts() -> dict:
    return {(nodeid, job): (passes, failures, flaky)
            for _, _, job, nodeid, passes, failures, flaky, _ in counted_jobs()}


def day_counts(nodeid: str) -> tuple:
    rows = NodeDay.objects.filter(node__nodeid=nodeid)
    return tuple(sum(getattr(r, f) for r in rows)
                 for f in ("runs", "failures", "flaky_failures", "flaky_commits"))


def test_a_rerun_within_one_file_alone_marks_the_test_flaky(suite):
    file = upload(suite, case(A, "rerun"), case(A, "passed"), case(B, "passed"))
    assert file.newly_flaky == [A] and file.flaky_in_file == 1
    assert job_counts()[A, ""] == (1, 1, True)
    assert day_counts(A) == (2, 1, 1, 1)
    assert day_counts(B) == (1, 0, 0, 0)


def test_attempts_of_one_job_add_up(suite):
    first = upload(suite, case(A, "failed"), job="linux", attempt=1)
    assert first.newly_flaky == [] and day_counts(A) == (1, 1, 0, 0)
    second = upload(suite, case(A, "passed"), job="linux", attempt=2)
    assert second.newly_flaky == [A]
    # The first attempt's failure counts as flaky once the second passed.
    assert day_counts(A) == (2, 1, 1, 1)
    third = upload(suite, case(A, "failed"), job="linux", attempt=3)
    assert third.newly_flaky == [] and day_counts(A) == (3, 2, 2, 1)


def test_a_pass_in_one_job_and_a_failure_in_another_differs_by_job(suite):
    upload(suite, case(A, "passed"), case(B, "failed"), job="linux")
    windows = upload(suite, case(A, "failed"), case(B, "passed"), job="windows")
    assert (windows.newly_flaky, windows.differs_by_job) == ([], [A, B])
    assert day_counts(A)[2:] == (0, 0)
    assert "differs by job, not flaky" in junit_summary(windows)

    retried = upload(suite, case(A, "passed"), job="windows", attempt=2)
    assert (retried.newly_flaky, retried.differs_by_job) == ([A], [])
    assert day_counts(A)[2:] == (1, 1)
    # Flaky in a second job of the same commit: flaky failures count, the commit once.
    linux = upload(suite, case(A, "rerun"), case(A, "passed"), job="linux", attempt=2)
    assert (linux.newly_flaky, linux.differs_by_job) == ([], [])
    assert day_counts(A)[2:] == (2, 1)


def test_another_commit_is_another_flaky_commit(suite):
    upload(suite, case(A, "rerun"), case(A, "passed"), commit="c1")
    assert upload(suite, case(A, "rerun"), case(A, "passed"), commit="c2").newly_flaky == [A]
    assert day_counts(A) == (4, 2, 2, 2)


def test_skipped_tests_are_not_counted(suite):
    upload(suite, case(A, "skipped"), case(B, "passed"))
    assert list(job_counts()) == [(B, "")]
    assert day_counts(A) == (0, 0, 0, 0)


def test_failures_group_by_signature_per_day_and_branch(suite):
    upload(suite, case(A, "failed", "timeout after 3.5s on worker 7"), job="j1")
    upload(suite, case(A, "failed", "timeout after 4.1s on worker 2"), job="j2")
    upload(suite, case(A, "failed", "connection refused"), job="j3", branch="dev")
    assert sorted(SignatureDay.objects.values_list("branch", "signature", "failures")) == [
        ("dev", "connection refused", 1), ("main", "timeout after <n>s on worker <n>", 2)]
    assert sorted(NodeDay.objects.values_list("branch", "runs")) == [("dev", 1), ("main", 2)]


# --- infrastructure failures ---------------------------------------------------------------


def suite_run(failing: int, total: int, *extra) -> list[tuple]:
    """``failing`` of ``total`` tests failed, each an assertion of its own: only the share
    can make the file an infrastructure failure (``test_infrastructure_signature``)."""
    return [case(f"t::test_{i}", "failed" if i < failing else "passed", "assert 1 == 2")
            for i in range(total)] + list(extra)


def test_a_file_where_most_tests_fail_is_an_infrastructure_failure(suite):
    before = {model: model.objects.count() for model in (NodeDay, SignatureDay)}
    file = upload(suite, *suite_run(9, 10, case(A, "rerun"), case(A, "passed")))
    assert (file.infrastructure_reason, file.failing_share) == ("failing_share", 9 / 11)
    assert file.newly_flaky == [] and file.flaky_in_file == 1
    assert CaseResult.objects.filter(file=file).count() == 11  # stored and shown
    assert {m: m.objects.count() for m in before} == before  # left out of detection
    assert job_counts() == {}
    assert "An infrastructure failure: 82% of the tests that ran never passed, over the " \
           "suite's 80%" in junit_summary(file)


@pytest.mark.parametrize(("failing", "total", "share", "flagged"), [
    (8, 10, 0.8, False),  # 80% is not more than 80%
    (9, 9, 0.8, False),  # under INFRASTRUCTURE_MIN_TESTS: a few failing tests
    (10, 10, 0.8, True),
    (6, 10, 0.5, True),  # the suite's own share
    (5, 10, 0.5, False),
])
def test_the_share_is_the_suites(suite, failing, total, share, flagged):
    suite.junit_infrastructure_share = share
    suite.save()
    file = upload(suite, *suite_run(failing, total))
    assert file.infrastructure is flagged
    assert file.infrastructure_share == share


ERRORS_OUTSIDE_TESTS = {
    "testsuite": b'<testsuite name="x"><error message="runner lost"/>'
                 b'<testcase classname="a" name="t"/></testsuite>',
    "testsuites": b'<testsuites><failure message="OOM killed"/><testsuite name="x">'
                  b'<testcase classname="a" name="t"/></testsuite></testsuites>',
    "pytest INTERNALERROR": junit_xml(("pytest", "internal", "error"), case(A, "passed")),
    "jest suite failed": b'<testsuites name="jest tests"><testsuite name="src/x.test.js">'
                         b'<testcase classname="Test suite failed to run" name="src/x.test.js">'
                         b"<error>Cannot find module</error></testcase></testsuite></testsuites>",
}


@pytest.mark.parametrize("name", ERRORS_OUTSIDE_TESTS)
def test_an_error_outside_any_test_is_an_infrastructure_failure(suite, name):
    file = upload(suite, xml=ERRORS_OUTSIDE_TESTS[name])
    assert file.infrastructure_reason == "error_outside_tests"
    assert job_counts() == {} and CaseResult.objects.filter(file=file).exists()
    assert "an error outside any test" in junit_summary(file)


# --- passive evidence and the gate ---------------------------------------------------------


def test_junit_nodes_never_join_the_known_nodes_nor_change_the_gate(suite, today):
    """A JUnit file of another branch than the default leaves the share as it was; no
    JUnit file makes a node "seen" or changes the served ledger (the default branch's
    runs size the test set: tests/test_ci_run_test_set.py)."""
    report_ingest(suite=suite, body=body([measurement(A)]), actor="ci")
    suite.refresh_from_db()
    share, revision = share_figures(suite, today), suite.ledger_revision
    seen = Node.objects.values_list("nodeid", "first_seen", "last_seen").get()
    upload(suite, *suite_run(3, 50, case(A, "failed")), branch="feature/x")
    suite.refresh_from_db()
    assert Node.objects.count() == 51
    assert share_figures(suite, today) == share and suite.ledger_revision == revision
    assert Node.objects.values_list("nodeid", "first_seen", "last_seen").get(
        nodeid=A) == seen
    assert not Node.objects.exclude(nodeid=A).filter(last_seen__isnull=False).exists()
    upload(suite, *suite_run(3, 50, case(A, "failed")), commit="c2")
    suite.refresh_from_db()
    assert suite.ledger_revision == revision
    assert not Node.objects.exclude(nodeid=A).filter(last_seen__isnull=False).exists()


# --- the order of uploads ------------------------------------------------------------------

NODES = [A, B, "tests/test_a.py::test_c"]
OUTCOMES = st.lists(st.sampled_from(["passed", "failed", "error", "skipped", "rerun"]),
                    min_size=1, max_size=3)
FILES = st.lists(
    st.tuples(st.sampled_from(["linux", "windows"]),
              st.fixed_dictionaries(dict.fromkeys(NODES, OUTCOMES))),
    min_size=1, max_size=5)


def _xml(outcomes: dict[str, list[str]]) -> bytes:
    """Each test's attempts as pytest-rerunfailures writes them: every one but the last a
    rerun (a failure), the last as it ended."""
    cases = []
    for nodeid, attempts in outcomes.items():
        *reruns, last = attempts
        cases += [case(nodeid, "rerun") for _ in reruns] + [case(nodeid, last)]
    return junit_xml(*cases)


def _state() -> tuple:
    days = {n: day_counts(n) for n in NODES}
    return job_counts(), days, sum(len(f.newly_flaky) for f in JUnitFile.objects.all())


@db_property(30)
@given(files=FILES, order=st.randoms(use_true_random=False))
def test_what_is_found_does_not_depend_on_the_order_of_uploads(suite, files, order):
    uploads = [(job, attempt, _xml(outcomes)) for attempt, (job, outcomes)
               in enumerate(files, start=1)]
    states = []
    for shuffled in (uploads, order.sample(uploads, len(uploads))):
        with rolled_back():
            for job, attempt, xml in shuffled:
                upload(suite, job=job, attempt=attempt, xml=xml)
            states.append(_state())
    assert states[0] == states[1]
    # And it is the rule's finding, from each job's counts.
    jobs, days, newly = states[0]
    for nodeid in NODES:
        counts = [(p, f) for (n, _), (p, f, _) in jobs.items() if n == nodeid]
        flaky = commit_finding(counts) is CommitFinding.FLAKY
        assert days[nodeid][3] == int(flaky)
    assert newly == sum(days[n][3] for n in NODES)
