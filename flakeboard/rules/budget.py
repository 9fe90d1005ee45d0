"""The budget gate (SPEC 2.2): one measurement against the ledger, and a whole report."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import date

from .entries import EntryFacts
from .new_tests import flaky_at_birth, passes_the_guard
from .share import ShareFigures
from .stats import upper95
from .vocab import GateStatus, Reason


@dataclass(frozen=True)
class Policy:
    max_upper_rate: float = 0.02
    min_runs: int = 200
    max_quarantined_share: float = 0.05
    max_quarantine_days: int = 30


def within_budget(n: int, fails: int, policy: Policy) -> bool:
    """Step 2 of the gate: enough runs, and the Wilson bound at or below the budget."""
    return n >= policy.min_runs and upper95(fails, n) <= policy.max_upper_rate


def policy_numbers(policy: Policy) -> dict:
    return asdict(policy)


def policy_hash(policy: Policy) -> str:
    """A short fingerprint of the policy's numbers: two gate answers with the same hash were
    judged by the same policy."""
    canonical = json.dumps(policy_numbers(policy), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class BudgetOutcome:
    status: GateStatus
    reason: Reason


def gate_measurement(
    *,
    n: int,
    fails: int,
    entry: EntryFacts | None,
    policy: Policy,
    today: date,
    new: bool = False,
) -> BudgetOutcome:
    """One measurement against the ledger; first match wins (SPEC 2.2). The new-test
    guard's measurement of a node ``new`` at the report's commit, with no entry, is judged
    by the guard first (2.4b) where the budget gate would not FAIL it anyway: a flip FAILs
    new_test_flaky, even within budget; a clean measurement too short for a budget claim
    passes as new_test_clean with at least NEW_TEST_MIN_RUNS runs. Over budget at full size
    stays over_budget.

    The decision uses the server's own upper95 only, never a reported one. An expired
    entry FAILs first, whatever else is true of its node (a tier violation included):
    no path lets the gate pass a node whose quarantine has run out.
    """
    if entry is not None and entry.expires < today:
        return BudgetOutcome(GateStatus.FAIL, Reason.QUARANTINE_EXPIRED)
    violating = entry is not None and entry.tier_violation
    if violating:
        entry = None
    if new and entry is None and not violating:
        full_size_fail = n >= policy.min_runs and not within_budget(n, fails, policy)
        if flaky_at_birth(n, fails) and not full_size_fail:
            return BudgetOutcome(GateStatus.FAIL, Reason.NEW_TEST_FLAKY)
        if passes_the_guard(n, fails) and n < policy.min_runs:
            return BudgetOutcome(GateStatus.OK, Reason.NEW_TEST_CLEAN)
    if within_budget(n, fails, policy):
        return BudgetOutcome(GateStatus.OK, Reason.WITHIN_BUDGET)
    if entry is None:
        if violating:
            return BudgetOutcome(GateStatus.FAIL, Reason.TIER_VIOLATION)
        # At full size this is step 2's bound. A short measurement whose failures would
        # fail even a full-size one is over budget: more runs are not what it lacks (a
        # measurement stopped early once its outcome was decided, say).
        if upper95(fails, max(n, policy.min_runs)) > policy.max_upper_rate:
            return BudgetOutcome(GateStatus.FAIL, Reason.OVER_BUDGET)
        return BudgetOutcome(GateStatus.FAIL, Reason.TOO_FEW_RUNS)
    return BudgetOutcome(GateStatus.WARN, Reason.QUARANTINED)


@dataclass(frozen=True)
class ReportOutcome:
    status: GateStatus
    reason: Reason
    exit_code: int
    share: float
    over_cap: bool


def gate_report(outcomes: Sequence[BudgetOutcome], *, share: ShareFigures) -> ReportOutcome:
    """The report fails on any FAIL, on no measurements, or on a share over the cap."""
    ratio, over = share.share, share.over_cap
    if not outcomes:
        return ReportOutcome(GateStatus.FAIL, Reason.NO_EVIDENCE, 1, ratio, over)
    first_fail = next((o for o in outcomes if o.status is GateStatus.FAIL), None)
    if first_fail is not None:
        return ReportOutcome(GateStatus.FAIL, first_fail.reason, 1, ratio, over)
    if over:
        return ReportOutcome(GateStatus.FAIL, Reason.QUARANTINE_CAP_EXCEEDED, 1, ratio, over)
    if any(o.status is GateStatus.WARN for o in outcomes):
        return ReportOutcome(GateStatus.WARN, Reason.QUARANTINED, 0, ratio, over)
    return ReportOutcome(GateStatus.OK, Reason.WITHIN_BUDGET, 0, ratio, over)
