"""The rules of passive evidence: what a JUnit file says of each test, when a file is an
infrastructure failure, and when a test is flaky on a commit. Pure Python, no Django.

Passive evidence never changes the gate: these rules decide what the board shows and what
is worth measuring, never whether a patch passes.

**Attempts.** Every run of a test in a file is an attempt, passed, failed, error or
skipped; failed and error are failures. A test's attempts in one file are its testcase
elements that map to one node id, in document order, plus, for Maven Surefire, the
``flakyFailure``/``flakyError`` elements inside a testcase (failed attempts before the one
the testcase reports) and ``rerunFailure``/``rerunError`` (failed attempts after it).
pytest-rerunfailures (16.x) writes a rerun test's testcase once per attempt and the failed
attempts carry no ``<failure>`` (the file then says ``failures="0"``): in a pytest file,
every copy of a testcase but the last is a failed attempt whatever it says, since the
plugin reruns only a failure.

**A file's test.** At most ATTEMPTS_MAX attempts. Its outcome is its last attempt's; its
failures are every failed or error attempt; its message is the first failure's first line.

**Flaky.** A test is flaky in a job of a commit when that job (its attempts and the reruns
within its files) has at least one pass and at least one failure of it. Passing in one
job and failing in another of the same commit is "differs by job" (a matrix: another
Python, another OS), a likely platform dependence, and not flaky.

**Infrastructure.** A file holding an error outside any test (``INFRASTRUCTURE_MARKS``),
or in which more than the suite's share of the tests that ran never passed (counted when
at least INFRASTRUCTURE_MIN_TESTS ran: a handful of failing tests is not a broken runner), or
in which every test that never passed, at least ONE_SIGNATURE_MIN_FAILURES, failed with one
failure signature (``flakeboard.rules.signatures``: a full disk says so in one voice), is an
infrastructure failure: stored and shown, and left out of flaky detection. The rule is
``flakeboard.rules.infrastructure``, which judges an attempt of the gate the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from flakeboard import rules as gate_rules
from flakeboard.rules import FailingTests


class Outcome(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"


FAILURES = frozenset({Outcome.FAILED, Outcome.ERROR})
# A test's attempts in one file: a file repeating one test more often is refused, naming it
# (its counts are stored in 2 bytes). A duration an attempt states past DURATION_MAX_S
# (about 31 years) is unknown, as a missing or infinite one is.
ATTEMPTS_MAX = 32_767
DURATION_MAX_S = 1e9


class Producer(StrEnum):
    """Who wrote a JUnit file: it decides how node ids are read and how reruns are written."""

    PYTEST = "pytest"
    SUREFIRE = "surefire"
    JEST = "jest"
    GOTESTSUM = "gotestsum"
    OTHER = "junit"


@dataclass(frozen=True, slots=True)
class Attempt:
    outcome: Outcome
    duration: float | None = None
    message: str = ""  # the failure's first line


@dataclass(frozen=True, slots=True)
class CaseOutcome:
    """One test in one file, its attempts merged."""

    outcome: Outcome  # the last attempt's
    attempts: int
    passes: int
    failures: int  # failed or error attempts
    duration: float | None  # all attempts together; None when no attempt says
    message: str  # the first failure's first line; "" when none says

    @property
    def ran(self) -> bool:
        """Passed or failed at least once: not only skipped. The tests the failing share
        and the flaky detection count."""
        return self.passes > 0 or self.failures > 0

    @property
    def reruns(self) -> int:
        return self.attempts - 1

    @property
    def flaky(self) -> bool:
        return is_flaky(self.passes, self.failures)


def merge_attempts(attempts: list[Attempt], *, copies_rerun: bool = False) -> CaseOutcome:
    """One test's attempts in a file, in order. ``copies_rerun``: the producer writes a
    rerun test once per attempt and only the last says how it ended (pytest)."""
    if len(attempts) == 1:  # most tests, most of the time
        (only,) = attempts
        failed = only.outcome in FAILURES
        return CaseOutcome(only.outcome, 1, int(only.outcome is Outcome.PASSED), int(failed),
                           only.duration, only.message if failed else "")
    if copies_rerun:
        attempts = [
            attempt if attempt.outcome in FAILURES else Attempt(Outcome.FAILED, attempt.duration)
            for attempt in attempts[:-1]
        ] + attempts[-1:]
    durations = [a.duration for a in attempts if a.duration is not None]
    failed = [a for a in attempts if a.outcome in FAILURES]
    return CaseOutcome(
        outcome=attempts[-1].outcome,
        attempts=len(attempts),
        passes=sum(a.outcome is Outcome.PASSED for a in attempts),
        failures=len(failed),
        duration=sum(durations) if durations else None,
        message=next((a.message for a in failed if a.message), ""),
    )


def is_flaky(passes: int, failures: int) -> bool:
    """The flaky rule, for one job of one commit (or one file): a pass and a failure."""
    return passes >= 1 and failures >= 1


def failing_tests(tests: list[CaseOutcome]) -> FailingTests:
    """A file's failing tests, counted in one pass: the upload stores their share and the
    infrastructure rule (``flakeboard.rules.infrastructure``) judges it, from the same
    count."""
    ran = [t for t in tests if t.ran]
    return FailingTests(len(ran), sum(t.passes == 0 for t in ran))


class CommitFinding(StrEnum):
    """What a commit's jobs say of one test, all together."""

    FLAKY = "flaky"  # one job passed and failed it
    DIFFERS_BY_JOB = "differs_by_job"  # passed in one job, failed in another
    FAILED = "failed"
    PASSED = "passed"
    NOT_RUN = "not_run"  # skipped, or never run


def commit_finding(jobs: list[tuple[int, int]]) -> CommitFinding:
    """The finding from each job's (passes, failures) of one test on one commit."""
    if any(is_flaky(passes, failures) for passes, failures in jobs):
        return CommitFinding.FLAKY
    passed = any(passes for passes, _ in jobs)
    failed = any(failures for _, failures in jobs)
    if passed and failed:
        return CommitFinding.DIFFERS_BY_JOB
    if failed:
        return CommitFinding.FAILED
    return CommitFinding.PASSED if passed else CommitFinding.NOT_RUN


@dataclass(frozen=True, slots=True)
class FlakyFigures:
    """A test's passive counts over a window: what the flaky-tests page ranks and shows.

    ``runs`` are its passed or failed attempts, ``flaky_failures`` its failures in jobs
    it was flaky in. The rate is flaky failures per run, with its Wilson upper bound:
    few runs give a wide bound. Neither is a gate: only a measurement's bound is.
    """

    runs: int
    failures: int
    flaky_failures: int
    flaky_commits: int

    @property
    def rate(self) -> float:
        return self.flaky_failures / self.runs if self.runs else 0.0

    @property
    def upper95(self) -> float:
        return gate_rules.upper95(self.flaky_failures, self.runs)
