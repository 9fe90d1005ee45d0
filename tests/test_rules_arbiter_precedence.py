"""SPEC 2.3 (arbiter): the precedence table, and the closed vocabularies of SPEC 2.6.

Precedence, first match wins:
  1. effective fixture_lock drifted / missing -> HOLD fixture_drifted / fixture_missing
  2. effective flake_status frozen            -> HOLD frozen_node
  3. property_check fail                      -> REJECT property_fail
  4. property_check not_run                   -> HOLD property_not_run
  5. otherwise (pass, match, stable)          -> ACCEPT clean
All 18 combinations of the three signals are written out by hand; ACCEPT is reachable from
exactly one of them (SPEC 2.4). Every Reason belongs to the arbiter or the budget gate, and
every enum is exactly the closed vocabulary of the spec.

Effective signals and flags: test_rules_arbiter_effective.py.
Aggregation, exit codes and the randomised invariants: test_rules_arbiter_aggregate.py.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

# The vocabulary from the module that owns it: this file checks it against the spec.
from flakeboard.rules import arbiter, vocab
from flakeboard.rules.arbiter import SignalRecord
from flakeboard.rules.vocab import (
    ARBITER_REASONS,
    BUDGET_REASONS,
    FixtureLock,
    FlakeStatus,
    PropertyCheck,
    Reason,
    Verdict,
)
from tests.helpers import NEXT_MONTH, TODAY
from tests.properties import PROPERTY

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
        "new_test_flaky",  # SPEC 2.4b and 2.6, amended by docs/new-tests.md
        "new_test_clean",
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
        pytest.param(
            vocab.Classification,
            {"stable", "flaky", "broken", "order_dependent", "repeat_unsafe"},
            id="Classification",
        ),
        pytest.param(vocab.GateStatus, {"OK", "WARN", "FAIL"}, id="GateStatus"),
        pytest.param(
            vocab.Flag,
            {"upper95_mismatch", "freeze_without_expiry", "ledger_disagrees", "tier_disagrees"},
            id="Flag",
        ),
        pytest.param(
            vocab.EntryState,
            {"active", "expiring", "expired", "cleared", "tier_violation"},
            id="EntryState",
        ),
    ],
)
def test_closed_vocabularies(enum: type, values: set[str]) -> None:
    assert {member.value for member in enum} == values


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
