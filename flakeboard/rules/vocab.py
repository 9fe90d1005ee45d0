"""The closed vocabularies of the gate: verdicts, statuses, reason codes, signal values,
measurement classifications and their causes, entry states and tiers. Tests iterate over
them, so a new member cannot slip past a table."""

from __future__ import annotations

from enum import StrEnum


class Verdict(StrEnum):
    ACCEPT = "accept"
    HOLD = "hold"
    REJECT = "reject"


class GateStatus(StrEnum):
    OK = "OK"
    WARN = "WARN"
    FAIL = "FAIL"


class Reason(StrEnum):
    # arbiter
    CLEAN = "clean"
    PROPERTY_FAIL = "property_fail"
    PROPERTY_NOT_RUN = "property_not_run"
    FROZEN_NODE = "frozen_node"
    FIXTURE_DRIFTED = "fixture_drifted"
    FIXTURE_MISSING = "fixture_missing"
    # budget gate
    WITHIN_BUDGET = "within_budget"
    QUARANTINED = "quarantined"
    QUARANTINE_EXPIRED = "quarantine_expired"
    OVER_BUDGET = "over_budget"
    TOO_FEW_RUNS = "too_few_runs"
    TIER_VIOLATION = "tier_violation"
    NEW_TEST_FLAKY = "new_test_flaky"  # 2.4b: a new node that both passed and failed
    NEW_TEST_CLEAN = "new_test_clean"  # 2.4b: a new node that passed every run: no budget claim
    # report or batch level
    QUARANTINE_CAP_EXCEEDED = "quarantine_cap_exceeded"
    NO_EVIDENCE = "no_evidence"


# The new-test guard's outcomes (2.4b): what its rows say is not a budget claim.
NEW_TEST_REASONS = (Reason.NEW_TEST_FLAKY, Reason.NEW_TEST_CLEAN)
ARBITER_REASONS = (
    Reason.CLEAN,
    Reason.PROPERTY_FAIL,
    Reason.PROPERTY_NOT_RUN,
    Reason.FROZEN_NODE,
    Reason.FIXTURE_DRIFTED,
    Reason.FIXTURE_MISSING,
    Reason.NO_EVIDENCE,
)
BUDGET_REASONS = (
    Reason.WITHIN_BUDGET,
    Reason.QUARANTINED,
    Reason.QUARANTINE_EXPIRED,
    Reason.OVER_BUDGET,
    Reason.TOO_FEW_RUNS,
    Reason.TIER_VIOLATION,
    Reason.NEW_TEST_FLAKY,
    Reason.NEW_TEST_CLEAN,
    Reason.QUARANTINE_CAP_EXCEEDED,
    Reason.NO_EVIDENCE,
)


class Flag(StrEnum):
    UPPER95_MISMATCH = "upper95_mismatch"
    FREEZE_WITHOUT_EXPIRY = "freeze_without_expiry"
    LEDGER_DISAGREES = "ledger_disagrees"
    TIER_DISAGREES = "tier_disagrees"  # a stated tier the tier rules do not give the node


class PropertyCheck(StrEnum):
    PASS = "pass"  # noqa: S105 - a signal value, not a password
    FAIL = "fail"
    NOT_RUN = "not_run"


class FixtureLock(StrEnum):
    MATCH = "match"
    DRIFTED = "drifted"
    MISSING = "missing"


class FlakeStatus(StrEnum):
    STABLE = "stable"
    FROZEN = "frozen"


class Classification(StrEnum):
    """What the client's measure command found a test to be: stable (never failed), flaky
    (mixed outcomes), broken (fails alone, after its module and in the session),
    order_dependent (depends on the tests before it: see CauseRole) or repeat_unsafe
    (repeating it in one process changes it; measured with a fresh process per run). Stored
    and shown, never used for a decision."""

    STABLE = "stable"
    FLAKY = "flaky"
    BROKEN = "broken"
    ORDER_DEPENDENT = "order_dependent"
    REPEAT_UNSAFE = "repeat_unsafe"


class CauseRole(StrEnum):
    """What the tests an order_dependent measurement names do to it: a polluter leaves state
    that fails it (it fails only after them), a state-setter leaves state it needs (it passes
    only after them)."""

    POLLUTER = "polluter"
    STATE_SETTER = "state_setter"


class PatchClass(StrEnum):
    """How much of a patch touches concurrency or time, as the client's gate --diff counts
    its added lines: low (none), medium (a few), high (many). A riskier class only asks for
    more repeat-budget evidence, never less; the board stores and shows it, and decides
    nothing by it."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class EntryState(StrEnum):
    ACTIVE = "active"
    EXPIRING = "expiring"
    EXPIRED = "expired"
    CLEARED = "cleared"
    TIER_VIOLATION = "tier_violation"


class Tier:
    PROPERTY = 0
    PINNED_FIXTURE = 1
    REPEAT_BUDGET = 2
    ALL = (0, 1, 2)


EXIT_CODES = {Verdict.ACCEPT: 0, Verdict.REJECT: 1, Verdict.HOLD: 2}
