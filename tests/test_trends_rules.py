"""Reading a reason-code distribution: which investment its codes point at, and the one
plain sentence the trends page prints under the distribution chart; and the range of days a
from/to pair asks for, the same for the page and the API."""

from __future__ import annotations

import re
from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakeboard.rules import (
    ARBITER_REASONS,
    BUDGET_REASONS,
    KNOWN_NODE_WINDOW_DAYS,
    GateStatus,
    Reason,
    Verdict,
)
from flakeboard.rules.trends import (
    DOMINANT_SHARE,
    INVESTMENT_FOR,
    Gate,
    Investment,
    Reading,
    outcome_of,
    percent,
    read_distribution,
)
from flakeboard.rules.trends_range import (
    DEFAULT_RANGE_DAYS,
    EARLIEST_DAY,
    MAX_RANGE_DAYS,
    RENAMED_PARAMETERS,
    DayRange,
    RangeError,
    RangeProblem,
    day_range,
    last_days,
    latest_to,
)
from tests.properties import PROPERTY


def test_every_reason_code_has_an_investment_entry() -> None:
    assert set(INVESTMENT_FOR) == set(Reason)
    assert {r for r, i in INVESTMENT_FOR.items() if i is None} == {
        Reason.CLEAN,
        Reason.WITHIN_BUDGET,
        Reason.NEW_TEST_CLEAN,
    }


@pytest.mark.parametrize("gate", list(Gate))
def test_every_gate_reason_has_an_outcome_from_the_rules(gate) -> None:
    assert set(outcome_of(gate)) == set(gate.reasons)


def test_outcomes_are_the_gates_own() -> None:
    arbiter, budget = outcome_of(Gate.ARBITER), outcome_of(Gate.BUDGET)
    assert arbiter[Reason.CLEAN] is Verdict.ACCEPT
    assert arbiter[Reason.PROPERTY_FAIL] is Verdict.REJECT
    assert {arbiter[r] for r in (Reason.FROZEN_NODE, Reason.FIXTURE_DRIFTED,
                                 Reason.FIXTURE_MISSING, Reason.PROPERTY_NOT_RUN,
                                 Reason.NO_EVIDENCE)} == {Verdict.HOLD}
    assert budget[Reason.WITHIN_BUDGET] is GateStatus.OK
    assert budget[Reason.QUARANTINED] is GateStatus.WARN
    assert {budget[r] for r in (Reason.OVER_BUDGET, Reason.TOO_FEW_RUNS,
                                Reason.QUARANTINE_EXPIRED, Reason.TIER_VIOLATION,
                                Reason.QUARANTINE_CAP_EXCEEDED)} == {GateStatus.FAIL}


def readings(text: str) -> list:
    """The reading table's cases. A case is a block: its id, the gate, the investment the
    reading names (or -) and that investment's share; the counts (or -); the sentence."""
    cases = []
    for block in re.split(r"\n(?=\S)", text.strip()):
        head, counts, *sentence = block.splitlines()
        case_id, gate, investment, share = head.split()
        totals = {} if counts.strip() == "-" else {
            reason: int(count) for reason, count in (pair.split("=") for pair in counts.split())
        }
        cases.append(pytest.param(
            totals, Gate[gate.upper()],
            None if investment == "-" else Investment[investment.upper()], float(share),
            " ".join(line.strip() for line in sentence), id=case_id,
        ))
    return cases


SENTENCES = readings("""
fixtures-dominate-the-holds  arbiter  fixture_pinning  0.62
    clean=900 fixture_drifted=40 fixture_missing=22 frozen_node=38
    fixture_drifted and fixture_missing are 62% of holds: fixture pinning is the next
    investment.
frozen-node-dominates  arbiter  flake_removal  0.70
    frozen_node=70 fixture_drifted=20 property_fail=10
    frozen_node dominates (70% of holds and rejects): flake removal is the next investment.
no-cause-dominates  arbiter  flake_removal  0.44
    frozen_node=44 fixture_drifted=31 property_fail=25
    No cause dominates: frozen_node leads with 44% of holds and rejects, so flake removal
    comes first, then fixture pinning (31%).
a-group-leads-without-dominating  arbiter  fixture_pinning  0.40
    fixture_drifted=25 fixture_missing=15 frozen_node=35 property_fail=25
    No cause dominates: fixture_drifted and fixture_missing lead with 40% of holds and
    rejects, so fixture pinning comes first, then flake removal (35%).
only-rejects  arbiter  property_fixes  1.0
    property_fail=3 clean=97
    property_fail dominates (100% of rejects): fixing property failures is the next
    investment.
a-tie-goes-to-the-first-investment-and-half-dominates  arbiter  fixture_pinning  0.5
    fixture_drifted=50 frozen_node=50
    fixture_drifted dominates (50% of holds): fixture pinning is the next investment.
budget-flakes  budget  flake_removal  0.75
    within_budget=500 quarantined=60 over_budget=15 too_few_runs=25
    quarantined and over_budget are 75% of failures and warnings: flake removal is the next
    investment.
budget-too-few-runs  budget  repeat_runs  0.8
    too_few_runs=8 quarantine_expired=2
    too_few_runs dominates (80% of failures): repeat-run capacity is the next investment.
ledger-upkeep  budget  ledger_upkeep  0.75
    quarantine_expired=3 tier_violation=3 over_budget=2
    quarantine_expired and tier_violation are 75% of failures: ledger upkeep is the next
    investment.
empty-batches  arbiter  upload_coverage  1.0
    no_evidence=2 clean=1
    no_evidence dominates (100% of holds): upload coverage is the next investment.
all-clean  arbiter  -  0.0
    clean=10 property_not_run=0
    Every verdict in this range is clean: nothing calls for an investment.
all-within-budget  budget  -  0.0
    within_budget=10
    Every measurement in this range is within budget: nothing calls for an investment.
no-verdicts  arbiter  -  0.0
    -
    No verdicts in this range.
only-zero-counts  budget  -  0.0
    over_budget=0
    No budget-gate outcomes in this range.
""")


@pytest.mark.parametrize(("totals", "gate", "investment", "share", "sentence"), SENTENCES)
def test_reading(totals, gate, investment, share, sentence) -> None:
    reading = read_distribution(totals, gate)
    assert reading.sentence == sentence
    assert reading.investment == investment
    assert reading.share == pytest.approx(share)
    assert reading.dominant == (investment is not None and share >= DOMINANT_SHARE)


@pytest.mark.parametrize(
    ("totals", "gate"),
    [
        ({"over_budget": 1}, Gate.ARBITER),
        ({"frozen_node": 1}, Gate.BUDGET),
        ({"not_a_reason": 1}, Gate.ARBITER),
        ({"clean": -1}, Gate.ARBITER),
    ],
)
def test_foreign_or_negative_counts_are_refused(totals, gate) -> None:
    with pytest.raises(ValueError, match=r"reason code|negative|not a valid"):
        read_distribution(totals, gate)


@pytest.mark.parametrize(
    ("share", "shown"),
    [(0.0, 0), (0.004, 0), (0.005, 1), (0.125, 13), (0.62, 62), (0.994, 99), (0.996, 99),
     (1.0, 100)],
)
def test_percent_rounds_half_up_and_keeps_100_for_all(share, shown) -> None:
    assert percent(share) == shown


def _totals(gate: Gate):
    return st.dictionaries(
        st.sampled_from([r.value for r in gate.reasons]), st.integers(0, 10_000), max_size=8
    )


@st.composite
def gates_and_totals(draw):
    gate = draw(st.sampled_from(list(Gate)))
    return gate, draw(_totals(gate))


def _groups(totals) -> dict[Investment, int]:
    groups = dict.fromkeys(Investment, 0)
    for reason, count in totals.items():
        if (investment := INVESTMENT_FOR[Reason(reason)]) is not None:
            groups[investment] += count
    return groups


@PROPERTY
@given(gates_and_totals())
def test_the_named_investment_holds_the_largest_share(case) -> None:
    gate, totals = case
    reading = read_distribution(totals, gate)
    groups = _groups(totals)
    problems = sum(groups.values())
    if problems == 0:
        assert reading == Reading(reading.sentence)
        assert "investment" not in reading.sentence or "nothing calls" in reading.sentence
        return
    assert groups[reading.investment] == max(groups.values())
    assert reading.share == pytest.approx(groups[reading.investment] / problems)
    assert reading.dominant == (reading.share >= DOMINANT_SHARE)
    assert str(reading.investment) in reading.sentence
    assert f"{percent(reading.share)}%" in reading.sentence
    assert reading.reasons
    assert all(INVESTMENT_FOR[r] is reading.investment and totals[r] > 0
               for r in reading.reasons)
    for reason in reading.reasons:
        assert reason.value in reading.sentence
    assert reading.sentence.endswith(".")


@PROPERTY
@given(gates_and_totals(), st.integers(2, 50), st.integers(0, 10_000))
def test_scaling_the_counts_or_adding_clean_ones_changes_nothing(case, factor, clean) -> None:
    gate, totals = case
    reading = read_distribution(totals, gate)
    scaled = read_distribution({r: c * factor for r, c in totals.items()}, gate)
    assert (scaled.investment, scaled.reasons, scaled.dominant) == (
        reading.investment, reading.reasons, reading.dominant)
    assert scaled.share == pytest.approx(reading.share)
    ok = Reason.CLEAN if gate is Gate.ARBITER else Reason.WITHIN_BUDGET
    with_clean = dict(totals)
    with_clean[ok.value] = with_clean.get(ok.value, 0) + clean + 1
    more = read_distribution(with_clean, gate)
    assert (more.investment, more.reasons, more.share) == (
        reading.investment, reading.reasons, reading.share)


def test_gate_vocabularies_are_the_rules() -> None:
    assert Gate.ARBITER.reasons == ARBITER_REASONS
    assert Gate.BUDGET.reasons == BUDGET_REASONS


# --- The range a from/to pair asks for ---------------------------------------------------

TODAY = date(2026, 6, 15)
NOT_A_DATE = RangeProblem.NOT_A_DATE


@pytest.mark.parametrize(
    ("first", "last", "expected"),
    [
        (None, None, (date(2026, 5, 17), TODAY)),  # the default: 30 days ending today
        (None, "2026-06-15", (date(2026, 5, 17), TODAY)),
        # Tomorrow in UTC, a viewer's today east of it: taken as today, and said so.
        (None, "2026-06-16", (date(2026, 5, 17), TODAY, date(2026, 6, 16))),
        ("2026-06-01", "2026-06-16", (date(2026, 6, 1), TODAY, date(2026, 6, 16))),
        ("2025-06-15", "2026-06-16", (date(2025, 6, 15), TODAY, date(2026, 6, 16))),  # 366
        ("2026-06-16", "2026-06-16", ("from", RangeProblem.AFTER_TODAY)),
        ("2026-06-17", "2026-06-16", ("from", RangeProblem.AFTER_TO)),
        (None, "2026-06-17", ("to", RangeProblem.AFTER_TODAY)),  # two days ahead
        ("2026-06-01", "2026-06-17", ("to", RangeProblem.AFTER_TODAY)),
        ("2026-06-16", None, ("from", RangeProblem.AFTER_TO)),
        ("2026-06-15", "2026-06-15", (TODAY, TODAY)),
        ("2026-06-10", "2026-06-09", ("from", RangeProblem.AFTER_TO)),
        (None, "2026-01-31", (date(2026, 1, 2), date(2026, 1, 31))),
        ("2026-06-01", None, (date(2026, 6, 1), TODAY)),
        ("2025-06-15", None, (date(2025, 6, 15), TODAY)),  # 366 days, the most
        ("2025-06-14", None, ("from", RangeProblem.TOO_LONG)),  # 367
        ("2000-01-01", "2000-12-31", (date(2000, 1, 1), date(2000, 12, 31))),  # leap: 366
        ("1999-12-31", "2000-01-05", ("from", RangeProblem.BEFORE_EARLIEST)),
        (None, "2000-01-10", (date(2000, 1, 1), date(2000, 1, 10))),  # default kept in bounds
        (None, "1999-12-31", ("to", RangeProblem.BEFORE_EARLIEST)),
        ("0001-01-01", "0001-01-01", ("from", RangeProblem.BEFORE_EARLIEST)),
        (None, "0001-01-01", ("to", RangeProblem.BEFORE_EARLIEST)),
        ("0001-01-01", None, ("from", RangeProblem.BEFORE_EARLIEST)),
        (None, "9999-12-31", ("to", RangeProblem.AFTER_TODAY)),
        ("9999-12-31", None, ("from", RangeProblem.AFTER_TO)),
        ("9999-12-31", "9999-12-31", ("to", RangeProblem.AFTER_TODAY)),
        ("", None, ("from", NOT_A_DATE)),
        ("yesterday", None, ("from", NOT_A_DATE)),
        ("2026-6-1", None, ("from", NOT_A_DATE)),
        ("20260601", None, ("from", NOT_A_DATE)),
        ("2026-W23-1", None, ("from", NOT_A_DATE)),
        ("2026-06-01T00:00:00", None, ("from", NOT_A_DATE)),
        ("2026-06-01\n", None, ("from", NOT_A_DATE)),
        (" 2026-06-01", None, ("from", NOT_A_DATE)),
        ("\uff12\uff10\uff12\uff16-06-01", None, ("from", NOT_A_DATE)),  # full-width digits
        (None, "2026-02-30", ("to", NOT_A_DATE)),
        (None, "0000-01-01", ("to", NOT_A_DATE)),
        ("2026-06-01", "today", ("to", NOT_A_DATE)),
        ("nope", "nope", ("from", NOT_A_DATE)),  # the first problem: from before to
    ],
)
def test_day_range(first, last, expected) -> None:
    found = day_range(first, last, today=TODAY)
    if isinstance(expected[0], date):
        start, end, *asked = expected  # a third day: the later end asked for, cut to today
        assert found == DayRange(start, end, end_asked=asked[0] if asked else None)
    else:
        assert isinstance(found, RangeError)
        assert (found.parameter, found.problem) == expected
        assert found.parameter in found.message.split()  # the sentence names it too


def test_a_range_cut_to_end_today_says_so() -> None:
    assert latest_to(TODAY) == date(2026, 6, 16)
    cut = day_range("2026-06-10", "2026-06-16", today=TODAY)
    assert cut.note == "to 2026-06-16 is after today in UTC; shown up to 2026-06-15."
    assert day_range("2026-06-10", "2026-06-15", today=TODAY).note == ""


def test_the_range_bounds() -> None:
    assert DEFAULT_RANGE_DAYS == 30 and MAX_RANGE_DAYS == 366
    assert last_days(DEFAULT_RANGE_DAYS, TODAY) == day_range(None, None, today=TODAY)
    # Far enough from date.min for the known-node window and a week's start before it.
    assert EARLIEST_DAY - timedelta(days=KNOWN_NODE_WINDOW_DAYS + 6) > date.min
    assert RENAMED_PARAMETERS == {"start": "from", "end": "to"}


DAY_TEXTS = st.one_of(st.none(), st.dates().map(date.isoformat), st.text(max_size=24))


@PROPERTY
@given(DAY_TEXTS, DAY_TEXTS, st.dates(EARLIEST_DAY, date(9999, 12, 1)))
def test_a_range_is_in_bounds_or_refused_by_name(first, last, today) -> None:
    found = day_range(first, last, today=today)
    if isinstance(found, RangeError):
        assert found.parameter in ("from", "to")
        assert found.message
    else:
        assert EARLIEST_DAY <= found.start <= found.end <= today
        assert found.days <= MAX_RANGE_DAYS
        # Cut to end today only from the one later day accepted, which was asked for.
        assert found.end_asked in (None, latest_to(today))
        assert (found.end_asked is not None) == (last == latest_to(today).isoformat())
