"""SPEC 2.3 (arbiter), its invariants from SPEC 2.4, and the closed vocabularies of SPEC 2.6.

Precedence, first match wins:
  1. effective fixture_lock drifted / missing -> HOLD fixture_drifted / fixture_missing
  2. effective flake_status frozen            -> HOLD frozen_node
  3. property_check fail                      -> REJECT property_fail
  4. property_check not_run                   -> HOLD property_not_run
  5. otherwise (pass, match, stable)          -> ACCEPT clean
Aggregate: no records -> HOLD no_evidence; any REJECT -> REJECT; any HOLD -> HOLD; else ACCEPT.
Exit codes: accept 0, reject 1, hold 2.
"""

from __future__ import annotations

import itertools
from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakeboard.rules import (
    ARBITER_REASONS,
    BUDGET_REASONS,
    EXIT_CODES,
    ArbiterOutcome,
    EntryFacts,
    EntryState,
    FixtureLock,
    FixturePin,
    Flag,
    FlakeStatus,
    GateStatus,
    PropertyCheck,
    Reason,
    SignalRecord,
    Verdict,
    arbiter,
)
from tests.helpers import (
    ACTIVE,
    EXPIRED,
    LAST_DAY,
    NEXT_MONTH,
    TODAY,
    TOMORROW,
    VIOLATING,
    YESTERDAY,
)
from tests.properties import PROPERTY

PIN = FixturePin(manifest="sha256:aaaa", seed=9137)
PIN_WITHOUT_SEED = FixturePin(manifest="sha256:aaaa", seed=None)

# --- the precedence table (SPEC 2.3) -------------------------------------------------------


@pytest.mark.parametrize(
    ("property_check", "fixture_lock", "flake_status", "verdict", "reason"),
    [
        pytest.param("fail", "drifted", "frozen", "hold", "fixture_drifted", id="1-drifted-first"),
        pytest.param("fail", "missing", "frozen", "hold", "fixture_missing", id="1-missing-first"),
        pytest.param("fail", "match", "frozen", "hold", "frozen_node", id="2-frozen-before-fail"),
        pytest.param("not_run", "match", "frozen", "hold", "frozen_node", id="2-frozen-not-run"),
        pytest.param("fail", "match", "stable", "reject", "property_fail", id="3-fail"),
        pytest.param("not_run", "match", "stable", "hold", "property_not_run", id="4-not-run"),
        pytest.param("pass", "match", "stable", "accept", "clean", id="5-clean"),
    ],
)
def test_precedence_first_match_wins(
    property_check: str, fixture_lock: str, flake_status: str, verdict: str, reason: str
) -> None:
    got = arbiter.arbitrate(
        PropertyCheck(property_check), FixtureLock(fixture_lock), FlakeStatus(flake_status)
    )
    assert got == (Verdict(verdict), Reason(reason))


# Every combination, written out by hand: property_check, fixture_lock, flake_status.
ALL_COMBINATIONS = {
    ("pass", "match", "stable"): ("accept", "clean"),
    ("pass", "match", "frozen"): ("hold", "frozen_node"),
    ("pass", "drifted", "stable"): ("hold", "fixture_drifted"),
    ("pass", "drifted", "frozen"): ("hold", "fixture_drifted"),
    ("pass", "missing", "stable"): ("hold", "fixture_missing"),
    ("pass", "missing", "frozen"): ("hold", "fixture_missing"),
    ("fail", "match", "stable"): ("reject", "property_fail"),
    ("fail", "match", "frozen"): ("hold", "frozen_node"),
    ("fail", "drifted", "stable"): ("hold", "fixture_drifted"),
    ("fail", "drifted", "frozen"): ("hold", "fixture_drifted"),
    ("fail", "missing", "stable"): ("hold", "fixture_missing"),
    ("fail", "missing", "frozen"): ("hold", "fixture_missing"),
    ("not_run", "match", "stable"): ("hold", "property_not_run"),
    ("not_run", "match", "frozen"): ("hold", "frozen_node"),
    ("not_run", "drifted", "stable"): ("hold", "fixture_drifted"),
    ("not_run", "drifted", "frozen"): ("hold", "fixture_drifted"),
    ("not_run", "missing", "stable"): ("hold", "fixture_missing"),
    ("not_run", "missing", "frozen"): ("hold", "fixture_missing"),
}


def test_the_table_covers_every_combination_of_the_three_signals() -> None:
    every = set(
        itertools.product(
            [p.value for p in PropertyCheck],
            [f.value for f in FixtureLock],
            [s.value for s in FlakeStatus],
        )
    )
    assert len(ALL_COMBINATIONS) == 18
    assert set(ALL_COMBINATIONS) == every


@pytest.mark.parametrize(
    ("signals", "expected"),
    [pytest.param(k, v, id="-".join(k)) for k, v in ALL_COMBINATIONS.items()],
)
def test_all_18_combinations(signals: tuple[str, str, str], expected: tuple[str, str]) -> None:
    property_check, fixture_lock, flake_status = signals
    verdict, reason = expected
    got = arbiter.arbitrate(
        PropertyCheck(property_check), FixtureLock(fixture_lock), FlakeStatus(flake_status)
    )
    assert got == (Verdict(verdict), Reason(reason))


@pytest.mark.parametrize(
    ("signals", "expected"),
    [pytest.param(k, v, id="-".join(k)) for k, v in ALL_COMBINATIONS.items()],
)
def test_all_18_combinations_through_evaluate_record(
    signals: tuple[str, str, str], expected: tuple[str, str]
) -> None:
    # No pin, no ledger entry, a freeze that lasts past today: the claims are the effective signals.
    property_check, fixture_lock, flake_status = signals
    record = SignalRecord(
        node="tests/test_ingest.py::test_stream_backpressure",
        property_check=PropertyCheck(property_check),
        fixture_lock=FixtureLock(fixture_lock),
        flake_status=FlakeStatus(flake_status),
        freeze_expires=NEXT_MONTH if flake_status == "frozen" else None,
    )
    outcome = arbiter.evaluate_record(record, ledger_entry=None, pin=None, today=TODAY)
    assert (outcome.verdict, outcome.reason) == (Verdict(expected[0]), Reason(expected[1]))
    assert outcome.fixture_lock is FixtureLock(fixture_lock)
    assert outcome.flake_status is FlakeStatus(flake_status)


# --- effective flake status --------------------------------------------------------------


@pytest.mark.parametrize(
    ("claimed", "freeze_expires", "ledger_entry", "effective"),
    [
        pytest.param("stable", None, None, "stable", id="stable-no-entry"),
        pytest.param("stable", None, ACTIVE, "frozen", id="stable-ledger-active"),
        pytest.param("stable", None, LAST_DAY, "frozen", id="stable-ledger-last-day"),
        pytest.param("stable", None, EXPIRED, "stable", id="stable-ledger-expired"),
        pytest.param("stable", None, VIOLATING, "stable", id="stable-ledger-violating"),
        pytest.param("stable", YESTERDAY, None, "stable", id="stable-ignores-freeze-date"),
        pytest.param("frozen", None, None, "frozen", id="frozen-without-expiry"),
        pytest.param("frozen", NEXT_MONTH, None, "frozen", id="frozen-until-next-month"),
        pytest.param("frozen", TOMORROW, None, "frozen", id="frozen-until-tomorrow"),
        pytest.param("frozen", TODAY, None, "frozen", id="frozen-until-today"),
        pytest.param("frozen", YESTERDAY, None, "stable", id="freeze-past-expiry"),
        pytest.param("frozen", YESTERDAY, ACTIVE, "frozen", id="freeze-over-ledger-on"),
        pytest.param("frozen", YESTERDAY, EXPIRED, "stable", id="freeze-and-entry-over"),
        pytest.param("frozen", YESTERDAY, VIOLATING, "stable", id="freeze-over-violating"),
        pytest.param("frozen", None, VIOLATING, "frozen", id="own-freeze-violating-entry"),
        pytest.param("frozen", None, EXPIRED, "frozen", id="own-freeze-expired-entry"),
    ],
)
def test_effective_flake_status(
    claimed: str, freeze_expires: date | None, ledger_entry: EntryFacts | None, effective: str
) -> None:
    got = arbiter.effective_flake_status(FlakeStatus(claimed), freeze_expires, ledger_entry, TODAY)
    assert got is FlakeStatus(effective)


# --- effective fixture lock --------------------------------------------------------------


@pytest.mark.parametrize(
    ("claimed", "manifest", "seed", "pin", "effective"),
    [
        # no pin: the record's claim stands
        pytest.param("match", None, None, None, "match", id="no-pin-match"),
        pytest.param("drifted", "sha256:aaaa", 9137, None, "drifted", id="no-pin-drifted"),
        pytest.param("missing", None, None, None, "missing", id="no-pin-missing"),
        # a pin: the server's finding
        pytest.param("match", "sha256:aaaa", 9137, PIN, "match", id="pin-matches"),
        pytest.param("match", "sha256:bbbb", 9137, PIN, "drifted", id="manifest-differs"),
        pytest.param("match", "sha256:aaaa", 1, PIN, "drifted", id="seed-differs"),
        pytest.param("match", "sha256:aaaa", None, PIN, "drifted", id="seed-absent"),
        pytest.param("match", "sha256:bbbb", 1, PIN, "drifted", id="both-differ"),
        pytest.param("match", None, 9137, PIN, "missing", id="no-manifest"),
        pytest.param("match", "", 9137, PIN, "missing", id="empty-manifest"),
        pytest.param("match", None, None, PIN, "missing", id="nothing"),
        # the worse of claim and finding wins: missing > drifted > match
        pytest.param("drifted", "sha256:aaaa", 9137, PIN, "drifted", id="claim-drifted-wins"),
        pytest.param("missing", "sha256:aaaa", 9137, PIN, "missing", id="claim-missing-wins"),
        pytest.param("missing", "sha256:bbbb", 9137, PIN, "missing", id="missing-over-drifted"),
        pytest.param("drifted", None, 9137, PIN, "missing", id="finding-missing-over-drifted"),
        pytest.param("drifted", "sha256:bbbb", 9137, PIN, "drifted", id="both-drifted"),
        # a pin without a seed compares the manifest only
        pytest.param("match", "sha256:aaaa", 42, PIN_WITHOUT_SEED, "match", id="seedless-pin"),
        pytest.param(
            "match", "sha256:bbbb", 42, PIN_WITHOUT_SEED, "drifted", id="seedless-pin-differs"
        ),
    ],
)
def test_effective_fixture_lock(
    claimed: str, manifest: str | None, seed: int | None, pin: FixturePin | None, effective: str
) -> None:
    got = arbiter.effective_fixture_lock(FixtureLock(claimed), manifest, seed, pin)
    assert got is FixtureLock(effective)


# --- evaluate_record: effective signals, verdicts and flags ---------------------------------


def _record(
    property_check: str = "pass",
    fixture_lock: str = "match",
    flake_status: str = "stable",
    manifest: str | None = "sha256:aaaa",
    seed: int | None = 9137,
    freeze_expires: date | None = None,
) -> SignalRecord:
    return SignalRecord(
        node="tests/test_ingest.py::test_stream_backpressure",
        property_check=PropertyCheck(property_check),
        fixture_lock=FixtureLock(fixture_lock),
        flake_status=FlakeStatus(flake_status),
        fixture_manifest=manifest,
        seed=seed,
        freeze_expires=freeze_expires,
    )


@pytest.mark.parametrize(
    ("record", "ledger_entry", "pin", "verdict", "reason"),
    [
        pytest.param(_record(), None, PIN, "accept", "clean", id="clean-with-pin"),
        pytest.param(
            _record(manifest="sha256:bbbb"),
            None,
            PIN,
            "hold",
            "fixture_drifted",
            id="claims-match-but-drifted",
        ),
        pytest.param(
            _record("fail", manifest=None),
            None,
            PIN,
            "hold",
            "fixture_missing",
            id="fail-but-manifest-missing",
        ),
        pytest.param(
            _record("fail"), ACTIVE, PIN, "hold", "frozen_node", id="fail-but-ledger-frozen"
        ),
        pytest.param(
            _record("fail"),
            EXPIRED,
            PIN,
            "reject",
            "property_fail",
            id="fail-entry-expired",
        ),
        pytest.param(
            _record("fail"),
            VIOLATING,
            PIN,
            "reject",
            "property_fail",
            id="fail-entry-violating",
        ),
        pytest.param(
            _record("fail", flake_status="frozen", freeze_expires=YESTERDAY),
            None,
            PIN,
            "reject",
            "property_fail",
            id="fail-freeze-over-evidence-counts",
        ),
        pytest.param(
            _record("fail", flake_status="frozen"),
            None,
            PIN,
            "hold",
            "frozen_node",
            id="fail-frozen-without-expiry",
        ),
        pytest.param(
            _record(flake_status="frozen", freeze_expires=YESTERDAY),
            None,
            None,
            "accept",
            "clean",
            id="pass-freeze-over",
        ),
        pytest.param(_record("not_run"), None, None, "hold", "property_not_run", id="not-run"),
    ],
)
def test_evaluate_record(
    record: SignalRecord,
    ledger_entry: EntryFacts | None,
    pin: FixturePin | None,
    verdict: str,
    reason: str,
) -> None:
    outcome = arbiter.evaluate_record(record, ledger_entry=ledger_entry, pin=pin, today=TODAY)
    assert (outcome.verdict, outcome.reason) == (Verdict(verdict), Reason(reason))


@pytest.mark.parametrize(
    ("record", "ledger_entry", "flags"),
    [
        pytest.param(_record(), None, set(), id="stable-no-entry"),
        pytest.param(_record(), ACTIVE, {"ledger_disagrees"}, id="stable-ledger-active"),
        pytest.param(_record(), EXPIRED, set(), id="stable-ledger-expired"),
        pytest.param(_record(), VIOLATING, set(), id="stable-ledger-violating"),
        pytest.param(
            _record(flake_status="frozen", freeze_expires=NEXT_MONTH),
            ACTIVE,
            set(),
            id="frozen-with-expiry-ledger-agrees",
        ),
        pytest.param(
            _record(flake_status="frozen"),
            ACTIVE,
            {"freeze_without_expiry"},
            id="frozen-without-expiry-ledger-agrees",
        ),
        pytest.param(
            _record(flake_status="frozen"),
            None,
            {"freeze_without_expiry", "ledger_disagrees"},
            id="frozen-without-expiry-no-entry",
        ),
        pytest.param(
            _record(flake_status="frozen", freeze_expires=NEXT_MONTH),
            None,
            {"ledger_disagrees"},
            id="frozen-with-expiry-no-entry",
        ),
        pytest.param(
            _record(flake_status="frozen", freeze_expires=NEXT_MONTH),
            EXPIRED,
            {"ledger_disagrees"},
            id="frozen-ledger-expired",
        ),
    ],
)
def test_flags(record: SignalRecord, ledger_entry: EntryFacts | None, flags: set[str]) -> None:
    outcome = arbiter.evaluate_record(record, ledger_entry=ledger_entry, pin=None, today=TODAY)
    assert set(outcome.flags) == {Flag(f) for f in flags}
    assert len(outcome.flags) == len(set(outcome.flags))


def test_evaluate_record_reports_the_effective_signals() -> None:
    record = _record("pass", "match", "stable", manifest="sha256:bbbb")
    outcome = arbiter.evaluate_record(record, ledger_entry=ACTIVE, pin=PIN, today=TODAY)
    assert outcome.fixture_lock is FixtureLock.DRIFTED
    assert outcome.flake_status is FlakeStatus.FROZEN


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


# --- closed vocabularies (SPEC 2.6, 3.2): a new member cannot slip past -----------------------


def test_every_reason_belongs_to_the_arbiter_or_the_budget_gate() -> None:
    for reason in Reason:
        assert reason in ARBITER_REASONS or reason in BUDGET_REASONS, reason
    assert set(ARBITER_REASONS) & set(BUDGET_REASONS) == {Reason.NO_EVIDENCE}
    assert set(ARBITER_REASONS) | set(BUDGET_REASONS) == set(Reason)
    assert len(ARBITER_REASONS) == len(set(ARBITER_REASONS))
    assert len(BUDGET_REASONS) == len(set(BUDGET_REASONS))


def test_reason_vocabularies_are_exactly_the_spec() -> None:
    assert {r.value for r in ARBITER_REASONS} == {
        "clean",
        "property_fail",
        "property_not_run",
        "frozen_node",
        "fixture_drifted",
        "fixture_missing",
        "no_evidence",
    }
    assert {r.value for r in BUDGET_REASONS} == {
        "within_budget",
        "quarantined",
        "quarantine_expired",
        "over_budget",
        "too_few_runs",
        "tier_violation",
        "quarantine_cap_exceeded",
        "no_evidence",
    }


def test_every_arbiter_reason_is_reachable() -> None:
    reached = {
        arbiter.arbitrate(p, f, s)[1]
        for p, f, s in itertools.product(PropertyCheck, FixtureLock, FlakeStatus)
    }
    reached.add(arbiter.aggregate([])[1])
    assert reached == set(ARBITER_REASONS)


@pytest.mark.parametrize(
    ("enum", "values"),
    [
        pytest.param(Verdict, {"accept", "hold", "reject"}, id="Verdict"),
        pytest.param(PropertyCheck, {"pass", "fail", "not_run"}, id="PropertyCheck"),
        pytest.param(FixtureLock, {"match", "drifted", "missing"}, id="FixtureLock"),
        pytest.param(FlakeStatus, {"stable", "frozen"}, id="FlakeStatus"),
        pytest.param(GateStatus, {"OK", "WARN", "FAIL"}, id="GateStatus"),
        pytest.param(
            Flag, {"upper95_mismatch", "freeze_without_expiry", "ledger_disagrees"}, id="Flag"
        ),
        pytest.param(
            EntryState,
            {"active", "expiring", "expired", "cleared", "tier_violation"},
            id="EntryState",
        ),
    ],
)
def test_closed_vocabularies(enum: type, values: set[str]) -> None:
    assert {member.value for member in enum} == values


@pytest.mark.parametrize("lock", list(FixtureLock), ids=str)
def test_every_fixture_lock_claim_is_ranked_against_every_finding(lock: FixtureLock) -> None:
    # The "worse of" order covers every member: missing > drifted > match.
    rank = {"match": 0, "drifted": 1, "missing": 2}
    findings = {
        FixtureLock.MATCH: ("sha256:aaaa", 9137),
        FixtureLock.DRIFTED: ("sha256:bbbb", 9137),
        FixtureLock.MISSING: (None, 9137),
    }
    assert set(findings) == set(FixtureLock)
    for found, (manifest, seed) in findings.items():
        worse = max(lock, found, key=lambda f: rank[f.value])
        assert arbiter.effective_fixture_lock(lock, manifest, seed, PIN) is worse


# --- invariants (SPEC 2.4) ------------------------------------------------------------------

signals = st.tuples(
    st.sampled_from(PropertyCheck), st.sampled_from(FixtureLock), st.sampled_from(FlakeStatus)
)


@PROPERTY
@given(signals)
def test_accept_is_reachable_from_exactly_one_combination(
    combo: tuple[PropertyCheck, FixtureLock, FlakeStatus],
) -> None:
    verdict, _ = arbiter.arbitrate(*combo)
    clean = (PropertyCheck.PASS, FixtureLock.MATCH, FlakeStatus.STABLE)
    assert (verdict is Verdict.ACCEPT) is (combo == clean)


def test_accept_is_reachable_from_exactly_one_combination_exhaustively() -> None:
    accepting = [
        combo
        for combo in itertools.product(PropertyCheck, FixtureLock, FlakeStatus)
        if arbiter.arbitrate(*combo)[0] is Verdict.ACCEPT
    ]
    assert accepting == [(PropertyCheck.PASS, FixtureLock.MATCH, FlakeStatus.STABLE)]


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
