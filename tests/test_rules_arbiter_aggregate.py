"""SPEC 2.3 aggregation and exit codes, and the arbiter invariants of SPEC 2.4.

Aggregate: no records -> HOLD no_evidence; any REJECT -> REJECT; any HOLD -> HOLD; else ACCEPT.
Exit codes: accept 0, reject 1, hold 2.
Invariants, checked on random records, pins, ledger entries and days: ACCEPT only from
pass / match / stable; a frozen node, or a drifted or missing fixture, never rejects; adding a
non-clean record never makes a batch accept; an empty batch never accepts.
"""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakeboard.rules import arbiter
from flakeboard.rules.arbiter import ArbiterOutcome, FixturePin, SignalRecord
from flakeboard.rules.entries import EntryFacts
from flakeboard.rules.vocab import (
    EXIT_CODES,
    FixtureLock,
    FlakeStatus,
    PropertyCheck,
    Reason,
    Verdict,
)
from tests.properties import PROPERTY

# --- aggregate and exit codes --------------------------------------------------------------

A, H, R = Verdict.ACCEPT, Verdict.HOLD, Verdict.REJECT


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        pytest.param([], H, id="empty-holds"),
        pytest.param([A], A, id="one-accept"),
        pytest.param([A, A, A], A, id="all-accept"),
        pytest.param([H], H, id="one-hold"),
        pytest.param([A, H], H, id="accept-hold"),
        pytest.param([H, A], H, id="hold-accept"),
        pytest.param([R], R, id="one-reject"),
        pytest.param([A, R], R, id="accept-reject"),
        pytest.param([H, R], R, id="hold-reject"),
        pytest.param([R, H], R, id="reject-hold"),
        pytest.param([A, H, R, A], R, id="mixed"),
    ],
)
def test_aggregate(verdicts: list[Verdict], expected: Verdict) -> None:
    verdict, reason = arbiter.aggregate(verdicts)
    assert verdict is expected
    assert reason is (Reason.NO_EVIDENCE if not verdicts else None)


def test_aggregate_of_an_empty_generator_is_hold_no_evidence() -> None:
    assert arbiter.aggregate(v for v in ()) == (Verdict.HOLD, Reason.NO_EVIDENCE)


def _outcome(verdict: str, reason: str) -> ArbiterOutcome:
    return ArbiterOutcome(Verdict(verdict), Reason(reason), FixtureLock.MATCH, FlakeStatus.STABLE)


@pytest.mark.parametrize(
    ("outcomes", "verdict", "reason"),
    [
        pytest.param([], "hold", "no_evidence", id="empty"),
        pytest.param([_outcome("accept", "clean")] * 2, "accept", "clean", id="all-clean"),
        pytest.param(
            [
                _outcome("accept", "clean"),
                _outcome("hold", "frozen_node"),
                _outcome("hold", "fixture_drifted"),
            ],
            "hold",
            "frozen_node",
            id="first-hold-decides",
        ),
        pytest.param(
            [
                _outcome("hold", "fixture_missing"),
                _outcome("reject", "property_fail"),
                _outcome("accept", "clean"),
            ],
            "reject",
            "property_fail",
            id="reject-beats-earlier-hold",
        ),
    ],
)
def test_aggregate_reason(outcomes: list[ArbiterOutcome], verdict: str, reason: str) -> None:
    assert arbiter.aggregate_reason(outcomes) == (Verdict(verdict), Reason(reason))


@pytest.mark.parametrize(
    ("verdict", "code"),
    [
        pytest.param("accept", 0, id="accept"),
        pytest.param("reject", 1, id="reject"),
        pytest.param("hold", 2, id="hold"),
    ],
)
def test_exit_codes(verdict: str, code: int) -> None:
    assert EXIT_CODES[Verdict(verdict)] == code


def test_every_verdict_has_an_exit_code() -> None:
    assert set(EXIT_CODES) == set(Verdict)
    assert sorted(EXIT_CODES.values()) == [0, 1, 2]


manifests = st.none() | st.sampled_from(["", "sha256:aaaa", "sha256:bbbb"])
seeds = st.none() | st.sampled_from([1, 9137])
pins = st.none() | st.builds(
    FixturePin, manifest=st.sampled_from(["sha256:aaaa", "sha256:bbbb"]), seed=seeds
)
offsets = st.integers(min_value=-40, max_value=40)
todays = st.dates(min_value=date(2001, 1, 1), max_value=date(2099, 1, 1))


@st.composite
def situations(draw: st.DrawFn) -> tuple[SignalRecord, EntryFacts | None, FixturePin | None, date]:
    """A random record with a random pin and ledger entry, on a random day."""
    today = draw(todays, label="today")
    freeze = draw(st.none() | offsets, label="freeze_expires")
    record = SignalRecord(
        node="tests/test_x.py::test_y",
        property_check=draw(st.sampled_from(PropertyCheck)),
        fixture_lock=draw(st.sampled_from(FixtureLock)),
        flake_status=draw(st.sampled_from(FlakeStatus)),
        fixture_manifest=draw(manifests),
        seed=draw(seeds),
        freeze_expires=None if freeze is None else today + timedelta(days=freeze),
        tier=draw(st.none() | st.sampled_from([0, 1, 2])),
    )
    entry_days = draw(st.none() | offsets, label="entry_expires")
    entry = (
        None
        if entry_days is None
        else EntryFacts(today + timedelta(days=entry_days), draw(st.booleans()))
    )
    return record, entry, draw(pins, label="pin"), today


def _evaluate(situation: tuple[SignalRecord, EntryFacts | None, FixturePin | None, date]):
    record, entry, pin, today = situation
    return arbiter.evaluate_record(record, ledger_entry=entry, pin=pin, today=today)


@PROPERTY
@given(situations())
def test_accept_only_from_pass_match_stable_through_evaluate_record(situation) -> None:
    outcome = _evaluate(situation)
    record, _, _, _ = situation
    clean = (
        record.property_check is PropertyCheck.PASS
        and outcome.fixture_lock is FixtureLock.MATCH
        and outcome.flake_status is FlakeStatus.STABLE
    )
    assert (outcome.verdict is Verdict.ACCEPT) is clean
    assert (outcome.reason is Reason.CLEAN) is clean


@PROPERTY
@given(situations())
def test_a_frozen_node_never_rejects(situation) -> None:
    record, entry, _, today = situation
    outcome = _evaluate(situation)
    # Frozen by the inputs themselves, not by what evaluate_record says it computed.
    frozen_by_ledger = entry is not None and not entry.tier_violation and entry.expires >= today
    frozen_by_record = record.flake_status is FlakeStatus.FROZEN and (
        record.freeze_expires is None or record.freeze_expires >= today
    )
    if frozen_by_ledger or frozen_by_record:
        assert outcome.verdict is not Verdict.REJECT
        assert outcome.verdict is Verdict.HOLD
        assert outcome.flake_status is FlakeStatus.FROZEN
    else:
        assert outcome.flake_status is FlakeStatus.STABLE
    if outcome.flake_status is FlakeStatus.FROZEN:
        assert outcome.verdict is not Verdict.REJECT


@PROPERTY
@given(situations())
def test_a_drifted_or_missing_fixture_never_rejects(situation) -> None:
    record, _, pin, _ = situation
    outcome = _evaluate(situation)
    claimed_bad = record.fixture_lock is not FixtureLock.MATCH
    found_missing = pin is not None and not record.fixture_manifest
    found_drifted = (
        pin is not None
        and not found_missing
        and (
            record.fixture_manifest != pin.manifest
            or (pin.seed is not None and record.seed != pin.seed)
        )
    )
    if claimed_bad or found_missing or found_drifted:
        assert outcome.verdict is not Verdict.REJECT
        assert outcome.verdict is Verdict.HOLD
        assert outcome.reason in (Reason.FIXTURE_DRIFTED, Reason.FIXTURE_MISSING)
    if found_missing or record.fixture_lock is FixtureLock.MISSING:
        assert outcome.reason is Reason.FIXTURE_MISSING
    if outcome.fixture_lock is not FixtureLock.MATCH:
        assert outcome.verdict is not Verdict.REJECT


@PROPERTY
@given(st.lists(situations(), max_size=8), situations(), st.integers(min_value=0, max_value=8))
def test_adding_a_non_clean_record_never_makes_a_batch_accept(batch, extra, position: int) -> None:
    outcomes = [_evaluate(s) for s in batch]
    added = _evaluate(extra)
    if added.verdict is Verdict.ACCEPT:  # only non-clean records are added here
        added = _outcome("hold", "property_not_run")
    before, _ = arbiter.aggregate(o.verdict for o in outcomes)
    outcomes.insert(position, added)
    after, _ = arbiter.aggregate(o.verdict for o in outcomes)
    assert after is not Verdict.ACCEPT
    if before is Verdict.REJECT:
        assert after is Verdict.REJECT
    assert arbiter.aggregate_reason(outcomes)[0] is after


@PROPERTY
@given(st.lists(st.sampled_from(Verdict), max_size=12))
def test_a_batch_accepts_only_when_nonempty_and_all_accept(verdicts: list[Verdict]) -> None:
    verdict, reason = arbiter.aggregate(verdicts)
    assert (verdict is Verdict.ACCEPT) is (bool(verdicts) and set(verdicts) == {Verdict.ACCEPT})
    if not verdicts:
        assert (verdict, reason) == (Verdict.HOLD, Reason.NO_EVIDENCE)
    elif Verdict.REJECT in verdicts:
        assert verdict is Verdict.REJECT
    elif Verdict.HOLD in verdicts:
        assert verdict is Verdict.HOLD
    assert EXIT_CODES[verdict] == {Verdict.ACCEPT: 0, Verdict.REJECT: 1, Verdict.HOLD: 2}[verdict]


def test_an_empty_batch_never_accepts() -> None:
    assert arbiter.aggregate([]) == (Verdict.HOLD, Reason.NO_EVIDENCE)
    assert arbiter.aggregate_reason([]) == (Verdict.HOLD, Reason.NO_EVIDENCE)
    assert EXIT_CODES[arbiter.aggregate([])[0]] == 2
