"""The rules of passive evidence (junit/rules.py), pure: a test's attempts in one file,
the flaky rule, what a commit's jobs say of a test, and when a file is an infrastructure
failure. Tables first, then the properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakeboard.rules import INFRASTRUCTURE_MIN_TESTS, InfrastructureReason, infrastructure_reason
from junit.rules import (
    FAILURES,
    Attempt,
    CaseOutcome,
    CommitFinding,
    Outcome,
    commit_finding,
    failing_tests,
    is_flaky,
    merge_attempts,
)
from tests.properties import PROPERTY

P, F, E, S = Outcome.PASSED, Outcome.FAILED, Outcome.ERROR, Outcome.SKIPPED


def attempts(*outcomes: Outcome, message: str = "") -> list[Attempt]:
    return [Attempt(o, 0.5, message if o in FAILURES else "") for o in outcomes]


# (attempts, pytest's copies, expected: outcome, attempts, passes, failures, reruns, flaky)
MERGES = [
    ([P], False, (P, 1, 1, 0, 0, False)),
    ([F], False, (F, 1, 0, 1, 0, False)),
    ([S], False, (S, 1, 0, 0, 0, False)),
    # Surefire: flakyFailure, flakyError, then the pass the testcase reports.
    ([F, E, P], False, (P, 3, 1, 2, 2, True)),
    # Surefire: the failure, then two rerunFailures.
    ([F, F, F], False, (F, 3, 0, 3, 2, False)),
    # gotestsum --rerun-fails: the failed testcase, then the passed one.
    ([F, P], False, (P, 2, 1, 1, 1, True)),
    # pytest-rerunfailures: the copies before the last say nothing, and were failures.
    ([P, P], True, (P, 2, 1, 1, 1, True)),
    ([P, P, F], True, (F, 3, 0, 3, 2, False)),
    ([P, P, E], True, (E, 3, 0, 3, 2, False)),
    ([P], True, (P, 1, 1, 0, 0, False)),
    # Not pytest: two copies are two attempts as they say (jest, same title twice).
    ([P, P], False, (P, 2, 2, 0, 1, False)),
]


@pytest.mark.parametrize(("outcomes", "copies", "expected"), MERGES)
def test_a_tests_attempts_in_one_file(outcomes, copies, expected):
    merged = merge_attempts(attempts(*outcomes), copies_rerun=copies)
    assert (merged.outcome, merged.attempts, merged.passes, merged.failures, merged.reruns,
            merged.flaky) == expected
    assert merged.duration == 0.5 * len(outcomes)


def test_the_message_is_the_first_failures():
    merged = merge_attempts([Attempt(P), Attempt(F, None, "first"), Attempt(E, None, "second")])
    assert merged.message == "first" and merged.duration is None
    assert merge_attempts([Attempt(F), Attempt(F, None, "said")]).message == "said"
    assert merge_attempts([Attempt(P, 1.0, "")]).message == ""


# Each job's (passes, failures) of one test on one commit, and what they show.
FINDINGS = [
    ([], CommitFinding.NOT_RUN),
    ([(0, 0)], CommitFinding.NOT_RUN),
    ([(3, 0)], CommitFinding.PASSED),
    ([(0, 2)], CommitFinding.FAILED),
    ([(1, 1)], CommitFinding.FLAKY),
    ([(2, 0), (0, 1)], CommitFinding.DIFFERS_BY_JOB),
    ([(2, 0), (0, 1), (1, 1)], CommitFinding.FLAKY),
    ([(2, 0), (5, 0)], CommitFinding.PASSED),
]


@pytest.mark.parametrize(("jobs", "finding"), FINDINGS)
def test_what_a_commits_jobs_show(jobs, finding):
    assert commit_finding(jobs) is finding


def test_every_finding_is_in_the_table():
    assert {finding for _, finding in FINDINGS} == set(CommitFinding)


def case(passes: int, failures: int) -> CaseOutcome:
    outcome = P if passes else F if failures else S
    return CaseOutcome(outcome, max(1, passes + failures), passes, failures, None, "")


def run(failing: int, passing: int, skipped: int = 0, flaky: int = 0) -> list[CaseOutcome]:
    return ([case(0, 1)] * failing + [case(1, 0)] * passing + [case(0, 0)] * skipped
            + [case(1, 1)] * flaky)


# (tests, errors outside tests, the suite's share, the reason)
INFRASTRUCTURE = [
    (run(9, 1), 0, 0.8, InfrastructureReason.FAILING_SHARE),
    (run(8, 2), 0, 0.8, None),  # 80% is not more than 80%: compared exactly
    (run(8, 1, flaky=1), 0, 0.8, None),  # a flaky test passed, so it is not failing
    (run(9, 0), 0, 0.8, None),  # fewer than INFRASTRUCTURE_MIN_TESTS ran
    (run(10, 0, skipped=90), 0, 0.8, InfrastructureReason.FAILING_SHARE),  # of those that ran
    (run(6, 4), 0, 0.5, InfrastructureReason.FAILING_SHARE),
    (run(3, 7), 0, 0.3, None),
    (run(0, 10), 1, 0.8, InfrastructureReason.ERROR_OUTSIDE_TESTS),
    ([], 1, 0.8, InfrastructureReason.ERROR_OUTSIDE_TESTS),
    ([], 0, 0.8, None),
    (run(10, 0), 0, 1.0, None),  # a share of 1 never flags a file for its failures
]


@pytest.mark.parametrize(("tests", "outside", "share", "reason"), INFRASTRUCTURE)
def test_when_a_file_is_an_infrastructure_failure(tests, outside, share, reason):
    failing = failing_tests(tests)
    assert infrastructure_reason(failing, errors_outside_tests=outside, share=share) is reason


def test_the_minimum_is_ten_tests_that_ran():
    assert INFRASTRUCTURE_MIN_TESTS == 10
    assert failing_tests(run(3, 1, skipped=5)) == (4, 3)
    assert failing_tests(run(3, 1, skipped=5)).share == 0.75
    assert failing_tests(run(0, 0, skipped=2)).share == 0


# (passes, failures, whether the test ran): skipped, and only skipped, is not running.
RAN = [(1, 0, True), (0, 1, True), (2, 3, True), (0, 0, False)]


@pytest.mark.parametrize(("passes", "failures", "ran"), RAN)
def test_a_test_ran_when_it_passed_or_failed(passes, failures, ran):
    assert case(passes, failures).ran is ran


OUTCOMES = st.lists(st.sampled_from(list(Outcome)), min_size=1, max_size=8)


@PROPERTY
@given(OUTCOMES, st.booleans())
def test_every_attempt_is_counted_once(outcomes, copies):
    merged = merge_attempts(attempts(*outcomes), copies_rerun=copies)
    skipped = sum(o is S for o in (outcomes if not copies else outcomes[-1:]))
    assert merged.passes + merged.failures + skipped == merged.attempts == len(outcomes)
    assert merged.outcome is outcomes[-1]
    assert merged.flaky is (merged.passes > 0 and merged.failures > 0)


@PROPERTY
@given(OUTCOMES)
def test_pytest_reruns_end_with_at_most_one_pass(outcomes):
    """pytest-rerunfailures stops at the first pass: whatever the earlier copies say, only
    the last can be a pass, and a rerun test that passed in the end is flaky."""
    merged = merge_attempts(attempts(*outcomes), copies_rerun=True)
    assert merged.passes == (outcomes[-1] is P)
    assert merged.flaky is (len(outcomes) > 1 and outcomes[-1] is P)


JOBS = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=6)


@PROPERTY
@given(JOBS, st.tuples(st.integers(0, 5), st.integers(0, 5)))
def test_flaky_is_one_job_and_another_job_never_undoes_it(jobs, another):
    finding = commit_finding(jobs)
    assert (finding is CommitFinding.FLAKY) is any(is_flaky(*job) for job in jobs)
    if finding is CommitFinding.FLAKY:
        assert commit_finding([*jobs, another]) is CommitFinding.FLAKY
    if finding is CommitFinding.DIFFERS_BY_JOB:
        assert len(jobs) >= 2  # a single job cannot differ from itself


@PROPERTY
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), max_size=40),
       st.integers(0, 3), st.floats(0, 1))
def test_more_failing_tests_never_clear_an_infrastructure_flag(tests, more, share):
    cases = [case(*t) for t in tests]
    flagged = infrastructure_reason(failing_tests(cases), errors_outside_tests=0, share=share)
    worse = infrastructure_reason(failing_tests(cases + [case(0, 1)] * more),
                                  errors_outside_tests=0, share=share)
    if flagged:
        assert worse is flagged
