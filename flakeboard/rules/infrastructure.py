"""When a run's failures are the runner's, not the tests' (SPEC 2.4a): one rule for a JUnit
file and for an attempt of the gate.

A run is an infrastructure failure when something failed outside any test (a JUnit file's
error outside its testcases), or when more than the suite's share of the tests that ran
never passed, counted once at least INFRASTRUCTURE_MIN_TESTS ran: a handful of failing
tests is not a broken runner. A full disk or a missing service fails every test at once.

Or when every test that never passed failed with one and the same failure signature (its
message with what changes from run to run replaced: ``flakeboard.rules.signatures``, the client's
copy for the gate), at least ONE_SIGNATURE_MIN_FAILURES of them: a runner that broke says
so in one voice ("OSError: [Errno <n>] No space left on device", "connection refused")
however few of its tests it reached, and a share of 5 in 200 would never say it. The
floor is there because one or two tests failing alike are as likely one bug as a broken
runner. A failed assertion is the test's own judgement, never the runner's, and its
signature is too alike across tests ("assert <n> == <n>") to say anything: it never makes
one; nor does a failure without a signature (an older client's).

Such a run is stored and shown, and is never flaky evidence: its failures beside another
run's passes say nothing of the tests. For the gate they still count: the verdict judges
every attempt's failures, and a retry never launders them.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from enum import StrEnum
from fractions import Fraction
from typing import NamedTuple

from .share import share_over_limit
from .vocab import PropertyCheck

INFRASTRUCTURE_MIN_TESTS = 10
ONE_SIGNATURE_MIN_FAILURES = 3
# A failed assertion's signature: pytest's "assert …", unittest's and others' AssertionError.
ASSERTION = re.compile(r"(?:E\s+)?(?:assert\b|(?:[\w.]*\.)?AssertionError\b)")


class InfrastructureReason(StrEnum):
    ERROR_OUTSIDE_TESTS = "error_outside_tests"
    FAILING_SHARE = "failing_share"
    ONE_SIGNATURE = "one_signature"


class FailingTests(NamedTuple):
    """Of a run's tests, those that ran and, of those, the ones that never passed: counted
    once, for the share a run stores and the infrastructure rule reads."""

    ran: int
    never_passed: int

    @property
    def share(self) -> Fraction:
        return Fraction(self.never_passed, self.ran) if self.ran else Fraction(0)


def one_signature(signatures: Collection[str]) -> str | None:
    """The signature every failure carries, when they are at least
    ONE_SIGNATURE_MIN_FAILURES and carry one, the same, which is no failed assertion's
    (None otherwise): ``signatures`` is one a failing test, "" for one without."""
    if len(signatures) < ONE_SIGNATURE_MIN_FAILURES:
        return None
    first, *rest = signatures
    if not first or ASSERTION.match(first) or any(other != first for other in rest):
        return None
    return first


def infrastructure_reason(
    failing: FailingTests, *, errors_outside_tests: int, share: float,
    signatures: Collection[str] = (),
) -> InfrastructureReason | None:
    """Why a run is an infrastructure failure, or None. ``share`` is the suite's: a run is
    one when more than that share of its tests fail (exactly: 8 of 10 is not over 0.8).
    ``signatures``: the failure signature of each test that never passed."""
    if errors_outside_tests:
        return InfrastructureReason.ERROR_OUTSIDE_TESTS
    if failing.ran >= INFRASTRUCTURE_MIN_TESTS and share_over_limit(failing.share, share):
        return InfrastructureReason.FAILING_SHARE
    if one_signature(signatures) is not None:
        return InfrastructureReason.ONE_SIGNATURE
    return None


def failing_records(checks: Iterable[PropertyCheck]) -> FailingTests:
    """An attempt of the gate's failing tests, from its records' property checks: a record
    ran when it passed or failed, and a failed one never passed."""
    ran = never_passed = 0
    for check in checks:
        if check is not PropertyCheck.NOT_RUN:
            ran += 1
            never_passed += check is PropertyCheck.FAIL
    return FailingTests(ran, never_passed)


def attempt_infrastructure(checks: Iterable[PropertyCheck], *, share: float,
                           signatures: Collection[str] = ()) -> InfrastructureReason | None:
    """Why an attempt of the gate is an infrastructure failure, or None: its records say
    nothing outside the tests, so only the failing share or its failed records' one
    signature (``signatures``, a failed record each) can make it one."""
    return infrastructure_reason(failing_records(checks), errors_outside_tests=0, share=share,
                                 signatures=signatures)
