"""The arbiter (SPEC 2.3): effective signals, the precedence table, the batch aggregate."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date

from .digests import same_digest
from .entries import EntryFacts, entry_is_live
from .tiers import tier_disagrees
from .vocab import FixtureLock, Flag, FlakeStatus, PropertyCheck, Reason, Verdict


@dataclass(frozen=True)
class FixturePin:
    manifest: str
    seed: int | None


LOCK_SEVERITY = {FixtureLock.MATCH: 0, FixtureLock.DRIFTED: 1, FixtureLock.MISSING: 2}


def effective_fixture_lock(
    claimed: FixtureLock, manifest: str | None, seed: int | None, pin: FixturePin | None
) -> FixtureLock:
    """The worse of the record's claim and what the suite's pin says of the record; the
    manifests are compared as digests, so ``sha256:9F2C`` matches a pin of ``9f2c``."""
    if pin is None:
        return claimed
    if not manifest:
        found = FixtureLock.MISSING
    elif not same_digest(manifest, pin.manifest) or (pin.seed is not None and seed != pin.seed):
        found = FixtureLock.DRIFTED
    else:
        found = FixtureLock.MATCH
    return max(claimed, found, key=LOCK_SEVERITY.__getitem__)


def effective_flake_status(
    claimed: FlakeStatus,
    freeze_expires: date | None,
    ledger_entry: EntryFacts | None,
    today: date,
) -> FlakeStatus:
    """Frozen by a live ledger entry, or by the record's own live freeze."""
    if ledger_entry is not None and entry_is_live(ledger_entry, today):
        return FlakeStatus.FROZEN
    if claimed is FlakeStatus.FROZEN and (freeze_expires is None or freeze_expires >= today):
        return FlakeStatus.FROZEN
    return FlakeStatus.STABLE


# The precedence table (SPEC 2.3) over effective signals (property_check, fixture_lock,
# flake_status), in order: the first rule that matches gives the verdict and its reason.
PRECEDENCE: tuple[
    tuple[Callable[[PropertyCheck, FixtureLock, FlakeStatus], bool], Verdict, Reason], ...
] = (
    (lambda check, lock, status: lock is FixtureLock.DRIFTED, Verdict.HOLD,
     Reason.FIXTURE_DRIFTED),
    (lambda check, lock, status: lock is FixtureLock.MISSING, Verdict.HOLD,
     Reason.FIXTURE_MISSING),
    (lambda check, lock, status: status is FlakeStatus.FROZEN, Verdict.HOLD, Reason.FROZEN_NODE),
    (lambda check, lock, status: check is PropertyCheck.FAIL, Verdict.REJECT,
     Reason.PROPERTY_FAIL),
    (lambda check, lock, status: check is PropertyCheck.NOT_RUN, Verdict.HOLD,
     Reason.PROPERTY_NOT_RUN),
    (lambda check, lock, status: True, Verdict.ACCEPT, Reason.CLEAN),
)
# A record's reason codes in the table's order: how the batch page lists its records.
PRECEDENCE_ORDER: tuple[Reason, ...] = tuple(reason for _, _, reason in PRECEDENCE)


def arbitrate(
    property_check: PropertyCheck, fixture_lock: FixtureLock, flake_status: FlakeStatus
) -> tuple[Verdict, Reason]:
    """The precedence table (SPEC 2.3) over effective signals; first match wins."""
    return next(
        (verdict, reason)
        for matches, verdict, reason in PRECEDENCE
        if matches(property_check, fixture_lock, flake_status)
    )


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
    tier: int | None = None,
) -> ArbiterOutcome:
    """One record through the precedence table. ``tier`` is the node's tier by the suite's
    tier rules, which the record's stated tier is compared with (None: not compared)."""
    lock = effective_fixture_lock(record.fixture_lock, record.fixture_manifest, record.seed, pin)
    status = effective_flake_status(
        record.flake_status, record.freeze_expires, ledger_entry, today
    )
    verdict, reason = arbitrate(record.property_check, lock, status)
    return ArbiterOutcome(verdict, reason, lock, status,
                          record_flags(record, ledger_entry, today, tier=tier))


def record_flags(
    record: SignalRecord, ledger_entry: EntryFacts | None, today: date, *,
    tier: int | None = None,
) -> tuple[Flag, ...]:
    """What a record's claims leave to note: a freeze without expiry, a ledger that
    disagrees with the record's flake status, a stated tier that is not the one the tier
    rules give the node (``tier``; None: not compared). None of them decides."""
    flags = []
    if record.flake_status is FlakeStatus.FROZEN and record.freeze_expires is None:
        flags.append(Flag.FREEZE_WITHOUT_EXPIRY)
    ledger_frozen = ledger_entry is not None and entry_is_live(ledger_entry, today)
    if (record.flake_status is FlakeStatus.FROZEN) != ledger_frozen:
        flags.append(Flag.LEDGER_DISAGREES)
    if tier is not None and tier_disagrees(record.tier, tier):
        flags.append(Flag.TIER_DISAGREES)
    return tuple(flags)


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
