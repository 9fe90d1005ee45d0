"""The rules of the gate (SPEC section 2), with no Django in sight.

Every decision the board makes is taken here: the Wilson bound, the budget gate for a
measurement and for a report, the arbiter's precedence table and its batch aggregate,
effective flake status and fixture lock, tier resolution, entry states and the quarantine
bounds. Nothing here reads the clock: callers pass ``today`` (a UTC date).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from enum import StrEnum
from fnmatch import fnmatchcase

Z95 = 1.96
UPPER95_TOLERANCE = 0.0005
EXPIRING_WITHIN_DAYS = 7
KNOWN_NODE_WINDOW_DAYS = 30
NODEID_MAX_LENGTH = 1000


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
    # report or batch level
    QUARANTINE_CAP_EXCEEDED = "quarantine_cap_exceeded"
    NO_EVIDENCE = "no_evidence"


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
    Reason.QUARANTINE_CAP_EXCEEDED,
    Reason.NO_EVIDENCE,
)


class Flag(StrEnum):
    UPPER95_MISMATCH = "upper95_mismatch"
    FREEZE_WITHOUT_EXPIRY = "freeze_without_expiry"
    LEDGER_DISAGREES = "ledger_disagrees"


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


@dataclass(frozen=True)
class Policy:
    max_upper_rate: float = 0.02
    min_runs: int = 200
    max_quarantined_share: float = 0.05
    max_quarantine_days: int = 30


# --- 2.1 Wilson upper bound -------------------------------------------------------------


def upper95(fails: int, n: int, z: float = Z95) -> float:
    """Upper limit of the Wilson score interval for fails/n, clipped to [0, 1]."""
    if n <= 0 or fails >= n:
        return 1.0
    p = fails / n
    z2 = z * z
    centre = p + z2 / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return min(1.0, max(0.0, (centre + margin) / (1 + z2 / n)))


def upper95_mismatch(reported: float | None, fails: int, n: int) -> bool:
    """A reported bound that differs from the server's by more than the tolerance."""
    return reported is not None and abs(reported - upper95(fails, n)) > UPPER95_TOLERANCE


def runs_needed(max_upper_rate: float, z: float = Z95) -> int:
    """Consecutive clean runs after which the Wilson bound is at or below max_upper_rate.

    With no failures the bound is z²/(n + z²), so n >= z²(1 - rate)/rate.
    """
    if max_upper_rate <= 0:
        raise ValueError("max_upper_rate must be above 0")
    if max_upper_rate >= 1:
        return 1
    n = max(1, math.ceil(z * z * (1 - max_upper_rate) / max_upper_rate - 1e-9))
    while upper95(0, n, z) > max_upper_rate:
        n += 1
    while n > 1 and upper95(0, n - 1, z) <= max_upper_rate:
        n -= 1
    return n


# --- 2.5 Tiers ----------------------------------------------------------------------------


@dataclass(frozen=True)
class TierRuleSpec:
    glob: str
    tier: int


@dataclass(frozen=True)
class TierResolution:
    tier: int
    rule: TierRuleSpec | None = None  # the rule that decided, when a rule did
    stated: bool = False  # decided by a tier an upload stated for the node


def resolve_tier(
    nodeid: str, rules: Iterable[TierRuleSpec], stated_tier: int | None = None
) -> TierResolution:
    """The node's tier: the lowest tier among matching rules and a stated 0 or 1; else 2."""
    best = TierResolution(Tier.REPEAT_BUDGET)
    for rule in rules:
        if rule.tier < best.tier and fnmatchcase(nodeid, rule.glob):
            best = TierResolution(rule.tier, rule=rule)
    if stated_tier is not None and stated_tier < best.tier:
        best = TierResolution(stated_tier, stated=True)
    return best


def sticky_tier(current: int | None, stated: int | None) -> int | None:
    """A stated tier 0 or 1 sticks to a node; a stated 2 never loosens it."""
    if stated is None or stated >= Tier.REPEAT_BUDGET:
        return current
    return stated if current is None else min(current, stated)


# --- Entries --------------------------------------------------------------------------


@dataclass(frozen=True)
class EntryFacts:
    """What the gate needs to know about a node's open ledger entry."""

    expires: date
    tier_violation: bool = False


def entry_state(
    *, expires: date, today: date, cleared: bool = False, tier_violation: bool = False
) -> EntryState:
    if cleared:
        return EntryState.CLEARED
    if tier_violation:
        return EntryState.TIER_VIOLATION
    if expires < today:
        return EntryState.EXPIRED
    if expires <= today + timedelta(days=EXPIRING_WITHIN_DAYS):
        return EntryState.EXPIRING
    return EntryState.ACTIVE


def entry_counts_for_share(facts: EntryFacts, today: date) -> bool:
    """Open, unexpired and not a tier violation."""
    return not facts.tier_violation and facts.expires >= today


def expiry_bounds(today: date, max_days: int) -> tuple[date, date]:
    """The earliest and latest expiry a new or renewed entry may have."""
    return today + timedelta(days=1), today + timedelta(days=max_days)


def expiry_error(expires: date, today: date, max_days: int) -> str | None:
    earliest, latest = expiry_bounds(today, max_days)
    if expires < earliest:
        return f"The expiry must be after today ({today.isoformat()})."
    if expires > latest:
        return (
            f"The expiry may be at most {max_days} days ahead "
            f"(no later than {latest.isoformat()})."
        )
    return None


_HANDLE = re.compile(r"^@[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,62})(?:/[A-Za-z0-9_.-]{1,64})?$")
_EMAIL = re.compile(r"^[^@\s<>\"'\x00-\x1f\x7f]{1,64}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+$")


def owner_error(owner: str) -> str | None:
    """An owner is a @handle (optionally @org/team) or an e-mail address."""
    if not owner or not owner.strip():
        return "An owner is required: a @handle or an e-mail address."
    if _HANDLE.fullmatch(owner) or (len(owner) <= 254 and _EMAIL.fullmatch(owner)):
        return None
    return "The owner must be a @handle (such as @finley) or an e-mail address."


def evidence_error(evidence: str) -> str | None:
    """Evidence is a CI run reference or an http(s) URL: non-empty, one line."""
    if not evidence or not evidence.strip():
        return "Evidence is required: a CI run reference or an http(s) URL."
    if len(evidence) > 2000:
        return "The evidence may be at most 2000 characters long."
    if has_control_chars(evidence):
        return "The evidence may not contain control characters or line breaks."
    return None


def evidence_is_link(evidence: str) -> bool:
    return evidence.lower().startswith(("http://", "https://"))


_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def has_control_chars(text: str) -> bool:
    return _CONTROL_CHARS.search(text) is not None


def nodeid_error(nodeid: object) -> str | None:
    if not isinstance(nodeid, str):
        return "must be a string"
    if not nodeid:
        return "must not be empty"
    if len(nodeid) > NODEID_MAX_LENGTH:
        return f"must be at most {NODEID_MAX_LENGTH} characters long (got {len(nodeid)})"
    if has_control_chars(nodeid):
        return "must not contain control characters"
    return None


# --- 2.2 Budget gate ------------------------------------------------------------------


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
) -> BudgetOutcome:
    """One measurement against the ledger; first match wins (SPEC 2.2).

    The decision uses the server's own upper95 only, never a reported one.
    """
    violating = entry is not None and entry.tier_violation
    if violating:
        entry = None
    if entry is not None and entry.expires < today:
        return BudgetOutcome(GateStatus.FAIL, Reason.QUARANTINE_EXPIRED)
    enough_runs = n >= policy.min_runs
    if upper95(fails, n) <= policy.max_upper_rate and enough_runs:
        return BudgetOutcome(GateStatus.OK, Reason.WITHIN_BUDGET)
    if entry is None:
        if violating:
            return BudgetOutcome(GateStatus.FAIL, Reason.TIER_VIOLATION)
        if not enough_runs:
            return BudgetOutcome(GateStatus.FAIL, Reason.TOO_FEW_RUNS)
        return BudgetOutcome(GateStatus.FAIL, Reason.OVER_BUDGET)
    return BudgetOutcome(GateStatus.WARN, Reason.QUARANTINED)


def quarantined_share(quarantined: int, test_set_size: int) -> float:
    if test_set_size <= 0:
        return 0.0 if quarantined <= 0 else 1.0
    return quarantined / test_set_size


def share_over_cap(quarantined: int, test_set_size: int, policy: Policy) -> bool:
    return quarantined_share(quarantined, test_set_size) > policy.max_quarantined_share + 1e-12


@dataclass(frozen=True)
class ReportOutcome:
    status: GateStatus
    reason: Reason
    exit_code: int
    share: float
    cap_exceeded: bool


def gate_report(
    outcomes: Sequence[BudgetOutcome],
    *,
    quarantined: int,
    test_set_size: int,
    policy: Policy,
) -> ReportOutcome:
    """The report fails on any FAIL, on no measurements, or on a share over the cap."""
    share = quarantined_share(quarantined, test_set_size)
    over = share_over_cap(quarantined, test_set_size, policy)
    if not outcomes:
        return ReportOutcome(GateStatus.FAIL, Reason.NO_EVIDENCE, 1, share, over)
    first_fail = next((o for o in outcomes if o.status is GateStatus.FAIL), None)
    if first_fail is not None:
        return ReportOutcome(GateStatus.FAIL, first_fail.reason, 1, share, over)
    if over:
        return ReportOutcome(GateStatus.FAIL, Reason.QUARANTINE_CAP_EXCEEDED, 1, share, over)
    if any(o.status is GateStatus.WARN for o in outcomes):
        return ReportOutcome(GateStatus.WARN, Reason.QUARANTINED, 0, share, over)
    return ReportOutcome(GateStatus.OK, Reason.WITHIN_BUDGET, 0, share, over)


# --- 2.3 Arbiter ------------------------------------------------------------------------


@dataclass(frozen=True)
class FixturePin:
    manifest: str
    seed: int | None


_LOCK_SEVERITY = {FixtureLock.MATCH: 0, FixtureLock.DRIFTED: 1, FixtureLock.MISSING: 2}


def effective_fixture_lock(
    claimed: FixtureLock, manifest: str | None, seed: int | None, pin: FixturePin | None
) -> FixtureLock:
    """The worse of the record's claim and what the suite's pin says of the record."""
    if pin is None:
        return claimed
    if not manifest:
        found = FixtureLock.MISSING
    elif manifest != pin.manifest or (pin.seed is not None and seed != pin.seed):
        found = FixtureLock.DRIFTED
    else:
        found = FixtureLock.MATCH
    return max(claimed, found, key=_LOCK_SEVERITY.__getitem__)


def effective_flake_status(
    claimed: FlakeStatus,
    freeze_expires: date | None,
    ledger_entry: EntryFacts | None,
    today: date,
) -> FlakeStatus:
    """Frozen by an unexpired, non-violating ledger entry, or by the record's own live freeze."""
    if ledger_entry is not None and entry_counts_for_share(ledger_entry, today):
        return FlakeStatus.FROZEN
    if claimed is FlakeStatus.FROZEN and (freeze_expires is None or freeze_expires >= today):
        return FlakeStatus.FROZEN
    return FlakeStatus.STABLE


def arbitrate(
    property_check: PropertyCheck, fixture_lock: FixtureLock, flake_status: FlakeStatus
) -> tuple[Verdict, Reason]:
    """The precedence table (SPEC 2.3) over effective signals; first match wins."""
    if fixture_lock is FixtureLock.DRIFTED:
        return Verdict.HOLD, Reason.FIXTURE_DRIFTED
    if fixture_lock is FixtureLock.MISSING:
        return Verdict.HOLD, Reason.FIXTURE_MISSING
    if flake_status is FlakeStatus.FROZEN:
        return Verdict.HOLD, Reason.FROZEN_NODE
    if property_check is PropertyCheck.FAIL:
        return Verdict.REJECT, Reason.PROPERTY_FAIL
    if property_check is PropertyCheck.NOT_RUN:
        return Verdict.HOLD, Reason.PROPERTY_NOT_RUN
    return Verdict.ACCEPT, Reason.CLEAN


@dataclass(frozen=True)
class SignalRecord:
    node: str
    property_check: PropertyCheck
    fixture_lock: FixtureLock
    flake_status: FlakeStatus
    fixture_manifest: str | None = None
    seed: int | None = None
    freeze_expires: date | None = None
    tier: int | None = None


@dataclass(frozen=True)
class ArbiterOutcome:
    verdict: Verdict
    reason: Reason
    fixture_lock: FixtureLock  # effective
    flake_status: FlakeStatus  # effective
    flags: tuple[Flag, ...] = field(default=())


def evaluate_record(
    record: SignalRecord,
    *,
    ledger_entry: EntryFacts | None,
    pin: FixturePin | None,
    today: date,
) -> ArbiterOutcome:
    lock = effective_fixture_lock(record.fixture_lock, record.fixture_manifest, record.seed, pin)
    status = effective_flake_status(
        record.flake_status, record.freeze_expires, ledger_entry, today
    )
    verdict, reason = arbitrate(record.property_check, lock, status)
    flags = []
    if record.flake_status is FlakeStatus.FROZEN and record.freeze_expires is None:
        flags.append(Flag.FREEZE_WITHOUT_EXPIRY)
    ledger_frozen = ledger_entry is not None and entry_counts_for_share(ledger_entry, today)
    if (record.flake_status is FlakeStatus.FROZEN) != ledger_frozen:
        flags.append(Flag.LEDGER_DISAGREES)
    return ArbiterOutcome(verdict, reason, lock, status, tuple(flags))


def aggregate(verdicts: Iterable[Verdict]) -> tuple[Verdict, Reason | None]:
    """A batch's verdict: no records HOLD no_evidence; any REJECT; any HOLD; else ACCEPT.

    The reason is None when the batch has records: the per-node reasons tell why.
    """
    seen = set(verdicts)
    if not seen:
        return Verdict.HOLD, Reason.NO_EVIDENCE
    for verdict in (Verdict.REJECT, Verdict.HOLD):
        if verdict in seen:
            return verdict, None
    return Verdict.ACCEPT, None


def aggregate_reason(outcomes: Sequence[ArbiterOutcome]) -> tuple[Verdict, Reason]:
    """The aggregate verdict with the reason of the first record that decided it."""
    verdict, reason = aggregate(o.verdict for o in outcomes)
    if reason is not None:
        return verdict, reason
    return verdict, next(o.reason for o in outcomes if o.verdict is verdict)
