"""The answer to a JUnit upload, made of what was stored: a new upload and its duplicate
answer alike (the API and, later, the client's summary read it)."""

from __future__ import annotations

from flakeboard.rules import TEST_SET_UNTRUSTED, InfrastructureReason, plural

from .ingest import JUnitOutcome
from .models import JUnitFile

LEFT_OUT = "its tests are stored, and left out of flaky-test detection"


def infrastructure_sentence(file: JUnitFile) -> str:
    """Why a file is an infrastructure failure, as the answer and the pages say it."""
    if file.infrastructure_reason == InfrastructureReason.ERROR_OUTSIDE_TESTS:
        why = "it holds an error outside any test (the runner or the build failed)"
    elif file.infrastructure_reason == InfrastructureReason.ONE_SIGNATURE:
        why = ("every test that never passed failed with one and the same message (the "
               "runner broke: a full disk, a missing service)")
    else:
        why = (f"{file.failing_share:.0%} of the tests that ran never passed, over the "
               f"suite's {file.infrastructure_share:.0%}")
    return f"An infrastructure failure: {why}; {LEFT_OUT}."


def sizes_test_set(file: JUnitFile) -> bool:
    """The file's tests count in its commit's CI run, which sizes the test set: it is of the
    suite's default branch, trusted to say so, and no broken runner's (ledger.test_set;
    docs/test-set.md, docs/trusted-ci.md)."""
    return (not file.infrastructure and not file.test_set_untrusted
            and file.branch == file.suite.default_branch)


def flags(file: JUnitFile) -> list[str]:
    return [TEST_SET_UNTRUSTED] if file.test_set_untrusted else []


def test_set_sentence(file: JUnitFile) -> str:
    """What the file does to the test set, where a CI job's author wants to know: counted,
    or (a file that names no branch, or is not trusted to name the default one) why not.
    A file of another branch says nothing."""
    default = file.suite.default_branch
    if sizes_test_set(file):
        return f" Its tests count in the test set: CI's run of {file.commit} on {default}."
    if file.test_set_untrusted:
        return (f" It states {default}, but was not sent with a default-branch-only token, "
                f"so it is kept as evidence and does not size the test set "
                f"({TEST_SET_UNTRUSTED}; docs/trusted-ci.md).")
    if not file.branch and not file.infrastructure:
        return (f" It names no branch, so it does not size the test set (only {default}'s "
                f"runs do: give the branch).")
    return ""


def summary(file: JUnitFile) -> str:
    counts = (f"{plural(file.testcases, 'test')}: {file.passed} passed, {file.failed} failed, "
              f"{file.error} error, {file.skipped} skipped; {plural(file.reruns, 'rerun')}.")
    if file.infrastructure:
        return f"{counts} {infrastructure_sentence(file)}"
    found = (f"{plural(len(file.newly_flaky), 'test')} newly flaky on commit "
             f"{file.commit}" + (f" (job {file.job})" if file.job else "") + ".")
    if file.differs_by_job:
        found += (f" {plural(len(file.differs_by_job), 'test')} passed in one job of the "
                  f"commit and failed in another: differs by job, not flaky.")
    return f"{counts} {found}{test_set_sentence(file)}"


def junit_answer(outcome: JUnitOutcome) -> dict:
    file = outcome.file
    return {
        "id": file.pk,
        "url": None,
        "duplicate": outcome.duplicate,
        "commit": file.commit,
        "branch": file.branch,
        "job": file.job,
        "attempt": file.attempt,
        "producer": file.producer,
        "counts": {
            "testcases": file.testcases, "passed": file.passed, "failed": file.failed,
            "error": file.error, "skipped": file.skipped, "reruns": file.reruns,
            "flaky_in_file": file.flaky_in_file,
        },
        "infrastructure": file.infrastructure,
        "infrastructure_reason": file.infrastructure_reason or None,
        "failing_share": round(file.failing_share, 4),
        "infrastructure_share": file.infrastructure_share,
        "newly_flaky": file.newly_flaky,
        "newly_flaky_count": len(file.newly_flaky),
        "differs_by_job": file.differs_by_job,
        "sizes_test_set": sizes_test_set(file),
        "flags": flags(file),
        "summary": summary(file),
    }
