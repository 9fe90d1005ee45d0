"""SPEC 2.2 (budget gate): one measurement against the ledger.

Gate order, first match wins:
  1. a ledger entry whose expiry is before today          -> FAIL quarantine_expired
  2. upper95 <= max_upper_rate and n >= min_runs           -> OK   within_budget
  3. no ledger entry                                       -> FAIL over_budget, when
     upper95(fails, max(n, min_runs)) > max_upper_rate (not even a full-size measurement
     with these failures could pass); else too_few_runs (n < min_runs is the only reason)
  4. otherwise                                             -> WARN quarantined
An expired entry FAILs at step 1 whatever else is true of its node, a tier violation
included. Otherwise a tier-violating entry counts as no entry; failing step 3 then gives
tier_violation.

The report level is test_rules_report_gate.py's. Entry states and the quarantine bounds of
SPEC 4 are in test_rules_budget_entries.py.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakeboard.rules import (
    BudgetOutcome,
    EntryFacts,
    GateStatus,
    Policy,
    Reason,
    gate_measurement,
    upper95,
)
from tests.helpers import (
    ACTIVE,
    EXPIRED,
    LAST_DAY,
    LONG_AGO,
    TODAY,
    VIOLATING,
    YESTERDAY,
)
from tests.properties import PROPERTY

# SPEC defaults: max_upper_rate 0.02, min_runs 200, max_quarantined_share 0.05, 30 days.
POLICY = Policy()

OK, WARN, FAIL = GateStatus.OK, GateStatus.WARN, GateStatus.FAIL

NO_ENTRY = None
EXPIRED_LONG_AGO = EntryFacts(expires=LONG_AGO)
VIOLATING_EXPIRED = EntryFacts(expires=YESTERDAY, tier_violation=True)


def test_defaults_are_the_spec_policy() -> None:
    assert (
        POLICY.max_upper_rate,
        POLICY.min_runs,
        POLICY.max_quarantined_share,
        POLICY.max_quarantine_days,
    ) == (0.02, 200, 0.05, 30)


# --- 2.2 one measurement against the ledger ----------------------------------------------

# Reference bounds (SPEC 2.1): 0/200 -> 0.0188 (within 2%), 1/200 -> 0.0278, 5/200 -> 0.0572,
# 0/189 -> 0.0199 (within 2%, but fewer than 200 runs), 0/60 -> 0.0602. A short measurement
# is judged at full size for step 3: 3/20 is over budget as 3/200 (0.0432) would be.
GATE_TABLE = {
    # id: entry, n, fails, status, reason, new: the new-test guard's row of a node new at the
    # report's commit (2.4b)
    # step 2 / 3 without an entry
    "no-entry-clean-200": (NO_ENTRY, 200, 0, OK, "within_budget", False),
    "no-entry-20-of-5000": (NO_ENTRY, 5000, 20, OK, "within_budget", False),
    "no-entry-1-of-200": (NO_ENTRY, 200, 1, FAIL, "over_budget", False),
    "no-entry-5-of-200": (NO_ENTRY, 200, 5, FAIL, "over_budget", False),
    "no-entry-always-fails": (NO_ENTRY, 200, 200, FAIL, "over_budget", False),
    "no-entry-within-rate-but-189-runs": (NO_ENTRY, 189, 0, FAIL, "too_few_runs", False),
    "no-entry-one-run-short": (NO_ENTRY, 199, 0, FAIL, "too_few_runs", False),
    "no-entry-clean-60": (NO_ENTRY, 60, 0, FAIL, "too_few_runs", False),
    "no-entry-single-run": (NO_ENTRY, 1, 0, FAIL, "too_few_runs", False),
    "no-entry-clean-20": (NO_ENTRY, 20, 0, FAIL, "too_few_runs", False),
    "no-entry-3-of-20-decided": (NO_ENTRY, 20, 3, FAIL, "over_budget", False),
    "no-entry-20-of-20": (NO_ENTRY, 20, 20, FAIL, "over_budget", False),
    "no-entry-single-failing-run": (NO_ENTRY, 1, 1, FAIL, "over_budget", False),
    "no-entry-1-of-199": (NO_ENTRY, 199, 1, FAIL, "over_budget", False),
    # step 4: quarantined
    "active-over-budget": (ACTIVE, 200, 5, WARN, "quarantined", False),
    "active-too-few-runs": (ACTIVE, 60, 0, WARN, "quarantined", False),
    "active-short-and-decided": (ACTIVE, 20, 3, WARN, "quarantined", False),
    "active-always-fails": (ACTIVE, 200, 200, WARN, "quarantined", False),
    "expires-today-still-quarantined": (LAST_DAY, 200, 5, WARN, "quarantined", False),
    # step 2 beats the entry: a quarantined node that recovered is simply within budget
    "active-but-within-budget": (ACTIVE, 200, 0, OK, "within_budget", False),
    # step 1: expired beats everything
    "expired-over-budget": (EXPIRED, 200, 5, FAIL, "quarantine_expired", False),
    "expired-beats-within-budget": (EXPIRED, 200, 0, FAIL, "quarantine_expired", False),
    "expired-beats-too-few-runs": (EXPIRED, 60, 0, FAIL, "quarantine_expired", False),
    "expired-short-and-decided": (EXPIRED, 20, 3, FAIL, "quarantine_expired", False),
    "expired-long-ago": (EXPIRED_LONG_AGO, 5000, 0, FAIL, "quarantine_expired", False),
    # tier violations count as no entry
    "violation-over-budget": (VIOLATING, 200, 5, FAIL, "tier_violation", False),
    "violation-too-few-runs": (VIOLATING, 60, 0, FAIL, "tier_violation", False),
    "violation-short-and-decided": (VIOLATING, 20, 3, FAIL, "tier_violation", False),
    "violation-within-budget": (VIOLATING, 200, 0, OK, "within_budget", False),
    # ...but an expired one fails at step 1 all the same
    "violation-expired": (VIOLATING_EXPIRED, 200, 5, FAIL, "quarantine_expired", False),
    "violation-expired-within-budget": (
        VIOLATING_EXPIRED, 200, 0, FAIL, "quarantine_expired", False),
    # the new-test guard (2.4b): a flip FAILs even within budget, a clean short run passes
    "new-clean-30": (NO_ENTRY, 30, 0, OK, "new_test_clean", True),
    "new-clean-3-a-slow-test": (NO_ENTRY, 3, 0, OK, "new_test_clean", True),
    "new-clean-but-2-runs": (NO_ENTRY, 2, 0, FAIL, "too_few_runs", True),
    "new-fails-a-fifth": (NO_ENTRY, 30, 6, FAIL, "new_test_flaky", True),
    "new-fails-once": (NO_ENTRY, 30, 1, FAIL, "new_test_flaky", True),
    "new-always-fails-a-failure": (NO_ENTRY, 30, 30, FAIL, "over_budget", True),
    "new-flipped-within-budget": (NO_ENTRY, 5000, 1, FAIL, "new_test_flaky", True),
    "new-over-budget-at-full-size": (NO_ENTRY, 200, 5, FAIL, "over_budget", True),
    "new-clean-at-full-size": (NO_ENTRY, 200, 0, OK, "within_budget", True),
    "new-but-quarantined": (ACTIVE, 30, 6, WARN, "quarantined", True),
    "new-but-expired": (EXPIRED, 30, 0, FAIL, "quarantine_expired", True),
    "new-but-violating": (VIOLATING, 30, 6, FAIL, "tier_violation", True),
}




@PROPERTY
@given(n=st.integers(min_value=2, max_value=100_000), data=st.data())
def test_the_guard_never_lets_a_new_test_that_flipped_pass(n: int, data) -> None:
    fails = data.draw(st.integers(min_value=1, max_value=n - 1))
    outcome = gate_measurement(n=n, fails=fails, entry=None, policy=POLICY, today=TODAY,
                               new=True)
    assert outcome.status is FAIL


@pytest.mark.parametrize(("entry", "n", "fails", "status", "reason", "new"),
                         GATE_TABLE.values(), ids=GATE_TABLE.keys())
def test_gate_measurement(
    entry: EntryFacts | None, n: int, fails: int, status: GateStatus, reason: str, new: bool
) -> None:
    outcome = gate_measurement(n=n, fails=fails, entry=entry, policy=POLICY, today=TODAY,
                               new=new)
    assert outcome == BudgetOutcome(status, Reason(reason))


@pytest.mark.parametrize(
    ("policy", "n", "fails", "status", "reason"),
    [
        # A stricter min_runs: 0/250 is within 2% (0.0151) but still too few runs.
        pytest.param(Policy(min_runs=300), 250, 0, FAIL, "too_few_runs", id="min-runs-300"),
        # 1/250 (0.0223) is over 2%, yet 1/300 (0.0186) would pass: more runs may save it.
        pytest.param(Policy(min_runs=300), 250, 1, FAIL, "too_few_runs", id="min-runs-300-1"),
        # 2/300 (0.0240) would not.
        pytest.param(Policy(min_runs=300), 250, 2, FAIL, "over_budget", id="min-runs-300-2"),
        pytest.param(Policy(min_runs=300), 300, 0, OK, "within_budget", id="min-runs-300-met"),
        # A looser rate: 5/200 (0.0572) is within 6%.
        pytest.param(Policy(max_upper_rate=0.06), 200, 5, OK, "within_budget", id="rate-6%"),
        pytest.param(Policy(max_upper_rate=0.05), 200, 5, FAIL, "over_budget", id="rate-5%"),
        # n == min_runs is enough.
        pytest.param(Policy(min_runs=60), 60, 0, FAIL, "over_budget", id="min-runs-60-0.0602"),
        pytest.param(
            Policy(min_runs=60, max_upper_rate=0.07), 60, 0, OK, "within_budget", id="n-eq-min"
        ),
    ],
)
def test_gate_measurement_follows_the_policy(
    policy: Policy, n: int, fails: int, status: GateStatus, reason: str
) -> None:
    outcome = gate_measurement(n=n, fails=fails, entry=None, policy=policy, today=TODAY)
    assert outcome == BudgetOutcome(status, Reason(reason))


def test_a_bound_exactly_at_the_rate_is_within_budget() -> None:
    policy = Policy(max_upper_rate=upper95(0, 200))
    outcome = gate_measurement(n=200, fails=0, entry=None, policy=policy, today=TODAY)
    assert outcome == BudgetOutcome(OK, Reason.WITHIN_BUDGET)


@pytest.mark.parametrize(("fails", "nudge", "reason"), [
    pytest.param(0, 0.0, "too_few_runs", id="0-fails-at-the-rate"),
    pytest.param(1, 0.0, "too_few_runs", id="1-fail-at-the-rate"),
    pytest.param(1, -1e-12, "over_budget", id="1-fail-just-over-the-rate"),
    pytest.param(3, 0.0, "too_few_runs", id="3-fails-at-the-rate"),
    pytest.param(3, -1e-12, "over_budget", id="3-fails-just-over-the-rate"),
])
def test_a_short_measurement_whose_full_size_bound_is_the_rate_is_too_short(
    fails: int, nudge: float, reason: str
) -> None:
    """At the edge: upper95(fails, min_runs) equal to the rate could still pass at full
    size (step 2 takes <=), so 20 runs are too few; a hair under the bound, it cannot."""
    policy = Policy(max_upper_rate=upper95(fails, POLICY.min_runs) + nudge)
    outcome = gate_measurement(n=20, fails=fails, entry=None, policy=policy, today=TODAY)
    assert outcome == BudgetOutcome(FAIL, Reason(reason))


@PROPERTY
@given(
    policy=st.builds(
        Policy,
        max_upper_rate=st.floats(min_value=0.001, max_value=1.0),
        min_runs=st.integers(min_value=2, max_value=2000),
    ),
    data=st.data(),
)
def test_a_short_measurement_is_over_budget_exactly_when_full_size_could_not_pass(
    policy: Policy, data: st.DataObject
) -> None:
    """n < min_runs, no entry: over_budget iff upper95(fails, max(n, min_runs)) is over the
    rate, that is iff the same failures in a measurement of full size would fail too;
    else too_few_runs, and a full-size measurement with these failures is within budget."""
    n = data.draw(st.integers(min_value=1, max_value=policy.min_runs - 1), label="n")
    fails = data.draw(st.integers(min_value=0, max_value=n), label="fails")
    outcome = gate_measurement(n=n, fails=fails, entry=None, policy=policy, today=TODAY)
    full = gate_measurement(n=policy.min_runs, fails=fails, entry=None, policy=policy,
                            today=TODAY)
    decided = upper95(fails, max(n, policy.min_runs)) > policy.max_upper_rate
    assert outcome.status is FAIL
    assert (outcome.reason is Reason.OVER_BUDGET) is decided
    assert (outcome.reason is Reason.TOO_FEW_RUNS) is (not decided)
    assert (full.reason is Reason.WITHIN_BUDGET) is (not decided)


@PROPERTY
@given(
    n=st.integers(min_value=1, max_value=20_000),
    data=st.data(),
    days=st.none() | st.integers(min_value=-60, max_value=60),
    violating=st.booleans(),
)
def test_gate_measurement_agrees_with_the_four_steps(
    n: int, data: st.DataObject, days: int | None, violating: bool
) -> None:
    fails = data.draw(st.integers(min_value=0, max_value=n), label="fails")
    entry = None if days is None else EntryFacts(TODAY + timedelta(days), violating)
    outcome = gate_measurement(n=n, fails=fails, entry=entry, policy=POLICY, today=TODAY)

    counts = entry is not None and not entry.tier_violation
    within = upper95(fails, n) <= POLICY.max_upper_rate and n >= POLICY.min_runs
    if entry is not None and entry.expires < TODAY:
        assert outcome == BudgetOutcome(FAIL, Reason.QUARANTINE_EXPIRED)
    elif within:
        assert outcome == BudgetOutcome(OK, Reason.WITHIN_BUDGET)
    elif not counts:
        assert outcome.status is FAIL
        if entry is not None:
            assert outcome.reason is Reason.TIER_VIOLATION
        else:
            decided = upper95(fails, max(n, POLICY.min_runs)) > POLICY.max_upper_rate
            assert outcome.reason is (Reason.OVER_BUDGET if decided else Reason.TOO_FEW_RUNS)
    else:
        assert outcome == BudgetOutcome(WARN, Reason.QUARANTINED)
