"""SPEC 2.2 (budget gate), the report level: the report fails on no evidence, on any FAIL
row, or when the quarantined share is over the cap. One measurement against the ledger is
test_rules_budget_gate.py's.
"""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakeboard.rules import (
    BUDGET_REASONS,
    BudgetOutcome,
    EntryFacts,
    GateStatus,
    Policy,
    Reason,
    ShareFigures,
    gate_measurement,
    gate_report,
    quarantined_share,
    share_over_cap,
)
from tests.helpers import ratio, table, yes
from tests.properties import PROPERTY
from tests.test_rules_budget_gate import FAIL, GATE_TABLE, OK, POLICY, WARN


def _o(status: GateStatus, reason: str) -> BudgetOutcome:
    return BudgetOutcome(status, Reason(reason))


OK_ROW = _o(OK, "within_budget")
WARN_ROW = _o(WARN, "quarantined")
OVER_ROW = _o(FAIL, "over_budget")
EXPIRED_ROW = _o(FAIL, "quarantine_expired")
FEW_ROW = _o(FAIL, "too_few_runs")
VIOLATION_ROW = _o(FAIL, "tier_violation")

REPORT_TABLE = [
    # outcomes, quarantined entries, test-set size, status, reason, exit code
    pytest.param([], 0, 100, FAIL, "no_evidence", 1, id="empty"),
    pytest.param([], 0, 0, FAIL, "no_evidence", 1, id="empty-no-tests"),
    pytest.param([], 50, 100, FAIL, "no_evidence", 1, id="empty-and-over-cap"),
    pytest.param([OK_ROW], 0, 100, OK, "within_budget", 0, id="one-ok"),
    pytest.param([OK_ROW, OK_ROW], 5, 100, OK, "within_budget", 0, id="share-at-cap"),
    pytest.param([WARN_ROW], 1, 100, WARN, "quarantined", 0, id="one-warn-passes"),
    pytest.param([OK_ROW, WARN_ROW, OK_ROW], 1, 100, WARN, "quarantined", 0, id="warns-pass"),
    pytest.param([OK_ROW, OVER_ROW], 0, 100, FAIL, "over_budget", 1, id="one-fail"),
    pytest.param([WARN_ROW, EXPIRED_ROW], 1, 100, FAIL, "quarantine_expired", 1, id="expired"),
    pytest.param([FEW_ROW], 0, 100, FAIL, "too_few_runs", 1, id="too-few-runs"),
    pytest.param([OK_ROW, VIOLATION_ROW], 0, 100, FAIL, "tier_violation", 1, id="violation"),
    pytest.param([OK_ROW], 6, 100, FAIL, "quarantine_cap_exceeded", 1, id="over-cap"),
    pytest.param([WARN_ROW], 6, 100, FAIL, "quarantine_cap_exceeded", 1, id="warn-over-cap"),
    pytest.param([OK_ROW], 1, 0, FAIL, "quarantine_cap_exceeded", 1, id="entries-no-tests"),
    pytest.param([OK_ROW], 0, 0, OK, "within_budget", 0, id="no-entries-no-tests"),
]


@pytest.mark.parametrize(
    ("outcomes", "quarantined", "size", "status", "reason", "exit_code"), REPORT_TABLE
)
def test_gate_report(
    outcomes: list[BudgetOutcome],
    quarantined: int,
    size: int,
    status: GateStatus,
    reason: str,
    exit_code: int,
) -> None:
    report = gate_report(
        outcomes, share=ShareFigures(quarantined, size, POLICY.max_quarantined_share)
    )
    assert (report.status, report.reason, report.exit_code) == (status, Reason(reason), exit_code)


def test_gate_report_over_cap_and_failing_fails_and_says_so() -> None:
    report = gate_report([OVER_ROW], share=ShareFigures(6, 100, POLICY.max_quarantined_share))
    assert report.status is FAIL
    assert report.exit_code == 1
    assert report.over_cap is True
    assert report.share == pytest.approx(0.06)


@pytest.mark.parametrize(("quarantined", "size", "share", "over"), table("""
    0   100   0      no    none
    5   100   0.05   no    at-cap
    6   100   0.06   yes   over-cap
    1    20   0.05   no    1-of-20-at-cap
    1    19   1/19   yes   1-of-19-over-cap
    3    60   0.05   no    3-of-60-float-at-cap
    0     0   0      no    empty-suite
    1     0   1      yes   entry-but-no-tests
""", int, int, ratio, yes))
def test_quarantined_share_against_the_cap(
    quarantined: int, size: int, share: float, over: bool
) -> None:
    assert quarantined_share(quarantined, size) == pytest.approx(share)
    assert share_over_cap(quarantined, size, POLICY.max_quarantined_share) is over


@PROPERTY
@given(
    measurements=st.lists(
        st.tuples(
            st.integers(min_value=1, max_value=5000),  # n
            st.floats(min_value=0, max_value=1),  # fails as a share of n
            st.none() | st.integers(min_value=-60, max_value=60),  # entry expiry, days from today
            st.booleans(),  # the entry is a tier violation
        ),
        max_size=20,
    ),
    expired=st.tuples(
        st.integers(min_value=1, max_value=5000),
        st.floats(min_value=0, max_value=1),
        st.integers(min_value=1, max_value=3650),  # expired this many days ago
        st.booleans(),  # and a tier violation too
    ),
    position=st.integers(min_value=0, max_value=20),
    quarantined=st.integers(min_value=0, max_value=1000),
    size=st.integers(min_value=0, max_value=1000),
    today=st.dates(min_value=date(2000, 1, 1), max_value=date(2100, 1, 1)),
    policy=st.builds(
        Policy,
        max_upper_rate=st.floats(min_value=0.001, max_value=1.0),
        min_runs=st.integers(min_value=1, max_value=1000),
        max_quarantined_share=st.floats(min_value=0.0, max_value=1.0),
    ),
)
def test_a_report_never_passes_with_an_expired_entry_in_it(
    measurements: list[tuple[int, float, int | None, bool]],
    expired: tuple[int, float, int, bool],
    position: int,
    quarantined: int,
    size: int,
    today: date,
    policy: Policy,
) -> None:
    def outcome(n: int, share: float, entry: EntryFacts | None) -> BudgetOutcome:
        fails = round(n * share)
        return gate_measurement(n=n, fails=fails, entry=entry, policy=policy, today=today)

    outcomes = [
        outcome(n, share, None if d is None else EntryFacts(today + timedelta(d), violating))
        for n, share, d, violating in measurements
    ]
    n, share, ago, violating = expired
    outcomes.insert(position, outcome(n, share, EntryFacts(today - timedelta(ago), violating)))

    report = gate_report(
        outcomes, share=ShareFigures(quarantined, size, policy.max_quarantined_share)
    )
    assert report.status is FAIL
    assert report.exit_code == 1


@PROPERTY
@given(
    outcomes=st.lists(
        st.sampled_from([OK_ROW, WARN_ROW, OVER_ROW, EXPIRED_ROW, FEW_ROW, VIOLATION_ROW]),
        max_size=10,
    ),
    quarantined=st.integers(min_value=0, max_value=100),
    size=st.integers(min_value=0, max_value=100),
)
def test_a_report_passes_exactly_when_nonempty_without_fail_and_within_cap(
    outcomes: list[BudgetOutcome], quarantined: int, size: int
) -> None:
    report = gate_report(
        outcomes, share=ShareFigures(quarantined, size, POLICY.max_quarantined_share)
    )
    passes = (
        bool(outcomes)
        and all(o.status is not FAIL for o in outcomes)
        and not share_over_cap(quarantined, size, POLICY.max_quarantined_share)
    )
    assert (report.exit_code == 0) is passes
    assert report.exit_code in (0, 1)
    assert (report.status is FAIL) is (report.exit_code == 1)


def test_every_budget_reason_is_reachable_in_these_tables() -> None:
    seen = {Reason(row[4]) for row in GATE_TABLE.values()} | {
        Reason(p.values[4]) for p in REPORT_TABLE}
    assert seen == set(BUDGET_REASONS)
