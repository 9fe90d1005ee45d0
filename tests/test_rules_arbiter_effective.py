"""SPEC 2.3 (arbiter): the effective signals and the flags of evaluate_record.

Effective flake_status: frozen while the record's own freeze or an active ledger entry lasts
(an entry with a tier violation does not freeze). Effective fixture_lock: without a pin the
record's claim stands; with a pin, the worse of claim and the server's finding wins
(missing > drifted > match), and a pin without a seed compares the manifest only.
evaluate_record arbitrates on the effective signals, reports them, and raises the flags
freeze_without_expiry and ledger_disagrees.

The precedence table itself: test_rules_arbiter_precedence.py.
"""

from __future__ import annotations

from datetime import date

import pytest

from flakeboard.rules import (
    EntryFacts,
    FixtureLock,
    FixturePin,
    Flag,
    FlakeStatus,
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

PIN = FixturePin(manifest="sha256:aaaa", seed=9137)
PIN_WITHOUT_SEED = FixturePin(manifest="sha256:aaaa", seed=None)


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
