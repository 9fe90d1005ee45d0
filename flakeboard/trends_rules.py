"""Reading a reason-code distribution: which causes dominate, and what to invest in next.

Every non-clean reason code points at one investment: fixture trouble at fixture pinning,
frozen and over-budget nodes at flake removal, and so on. Over a range of verdicts (or of
budget-gate outcomes), the investment whose reason codes hold the largest share of the
problems is the next one; when that share is at least half, its codes dominate.

The noun a sentence uses ("holds", "rejects", "failures", ...) is read off the gate rules
themselves, so this module never restates which reason comes with which verdict.

It also decides, once for the trends page and the API alike, which range of days a
``from``/``to`` pair asks for, or why that pair is refused.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from enum import StrEnum
from functools import cache
from itertools import product

from flakeboard import rules
from flakeboard.rules import Reason

DOMINANT_SHARE = 0.5


class Gate(StrEnum):
    ARBITER = "arbiter"  # per-node verdicts of signal records
    BUDGET = "budget"  # per-measurement outcomes of flake reports

    @property
    def reasons(self) -> tuple[Reason, ...]:
        return rules.ARBITER_REASONS if self is Gate.ARBITER else rules.BUDGET_REASONS


class Investment(StrEnum):
    """Where a lead's next effort goes; the order breaks ties between equal shares."""

    FIXTURE_PINNING = "fixture pinning"
    FLAKE_REMOVAL = "flake removal"
    PROPERTY_FIXES = "fixing property failures"
    PROPERTY_COVERAGE = "property-check coverage"
    REPEAT_RUNS = "repeat-run capacity"
    LEDGER_UPKEEP = "ledger upkeep"
    UPLOAD_COVERAGE = "upload coverage"


# The investment each reason code calls for; None for the codes that report no problem.
INVESTMENT_FOR: dict[Reason, Investment | None] = {
    Reason.CLEAN: None,
    Reason.WITHIN_BUDGET: None,
    Reason.FIXTURE_DRIFTED: Investment.FIXTURE_PINNING,
    Reason.FIXTURE_MISSING: Investment.FIXTURE_PINNING,
    Reason.FROZEN_NODE: Investment.FLAKE_REMOVAL,
    Reason.OVER_BUDGET: Investment.FLAKE_REMOVAL,
    Reason.QUARANTINED: Investment.FLAKE_REMOVAL,
    Reason.QUARANTINE_CAP_EXCEEDED: Investment.FLAKE_REMOVAL,
    Reason.PROPERTY_FAIL: Investment.PROPERTY_FIXES,
    Reason.PROPERTY_NOT_RUN: Investment.PROPERTY_COVERAGE,
    Reason.TOO_FEW_RUNS: Investment.REPEAT_RUNS,
    Reason.QUARANTINE_EXPIRED: Investment.LEDGER_UPKEEP,
    Reason.TIER_VIOLATION: Investment.LEDGER_UPKEEP,
    Reason.NO_EVIDENCE: Investment.UPLOAD_COVERAGE,
}

_WHAT = {Gate.ARBITER: "verdicts", Gate.BUDGET: "budget-gate outcomes"}
_ALL_CLEAN = {
    Gate.ARBITER: "Every verdict in this range is clean: nothing calls for an investment.",
    Gate.BUDGET: (
        "Every measurement in this range is within budget: nothing calls for an investment."
    ),
}
# Plural nouns for the outcomes a problem reason comes with, in the order they are listed.
_NOUNS = {
    rules.Verdict.HOLD: "holds",
    rules.Verdict.REJECT: "rejects",
    rules.GateStatus.FAIL: "failures",
    rules.GateStatus.WARN: "warnings",
}


@cache
def outcome_of(gate: Gate) -> dict[Reason, rules.Verdict | rules.GateStatus]:
    """The verdict or gate status each of the gate's reasons comes with, asked of the rules."""
    if gate is Gate.ARBITER:
        found = {
            reason: verdict
            for verdict, reason in (
                rules.arbitrate(*signals)
                for signals in product(rules.PropertyCheck, rules.FixtureLock, rules.FlakeStatus)
            )
        }
        found[Reason.NO_EVIDENCE] = rules.aggregate([])[0]
        return found
    policy = rules.Policy()
    today = date(2000, 1, 1)
    entries = [
        None,
        rules.EntryFacts(today - timedelta(days=1)),
        rules.EntryFacts(today + timedelta(days=1)),
        rules.EntryFacts(today + timedelta(days=1), tier_violation=True),
    ]
    samples = [(policy.min_runs * 10, 0), (1, 0), (policy.min_runs, policy.min_runs)]
    found = {}
    for entry, (n, fails) in product(entries, samples):
        outcome = rules.gate_measurement(n=n, fails=fails, entry=entry, policy=policy, today=today)
        found[outcome.reason] = outcome.status
    empty = rules.gate_report([], share=rules.ShareFigures(0, 1, policy.max_quarantined_share))
    over = rules.gate_report(
        [rules.BudgetOutcome(rules.GateStatus.OK, Reason.WITHIN_BUDGET)],
        share=rules.ShareFigures(1, 1, cap=0.0),
    )
    found[empty.reason] = empty.status
    found[over.reason] = over.status
    return found


@dataclass(frozen=True)
class Reading:
    """One plain sentence about a distribution, and the facts it was made from."""

    sentence: str
    investment: Investment | None = None
    reasons: tuple[Reason, ...] = ()  # the leading investment's codes, most frequent first
    share: float = 0.0  # their part of all problem codes
    dominant: bool = False


def percent(share: float) -> int:
    """A share as a whole percentage, rounded half up; never 100 unless it is all."""
    value = math.floor(share * 100 + 0.5)
    return 99 if value == 100 and share < 1 else value


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _noun(gate: Gate, problems: Mapping[Reason, int]) -> str:
    outcomes = outcome_of(gate)
    present = {outcomes[reason] for reason in problems}
    return _listed([noun for outcome, noun in _NOUNS.items() if outcome in present])


def read_distribution(totals: Mapping[str, int], gate: Gate) -> Reading:
    """Which investment the distribution of ``totals`` (reason code → count) points at."""
    counts: dict[Reason, int] = {}
    for key, count in totals.items():
        reason = Reason(key)
        if reason not in gate.reasons:
            raise ValueError(f"{reason} is not a reason code of the {gate} gate")
        if count < 0:
            raise ValueError(f"{reason} has a negative count")
        counts[reason] = counts.get(reason, 0) + count
    if not any(counts.values()):
        return Reading(f"No {_WHAT[gate]} in this range.")
    problems = {r: c for r, c in counts.items() if c and INVESTMENT_FOR[r] is not None}
    if not problems:
        return Reading(_ALL_CLEAN[gate])

    by_investment = dict.fromkeys(Investment, 0)
    for reason, count in problems.items():
        by_investment[INVESTMENT_FOR[reason]] += count
    ranked = sorted(Investment, key=lambda i: -by_investment[i])  # stable: ties keep enum order
    first, second = ranked[0], ranked[1]
    total = sum(problems.values())
    share = by_investment[first] / total
    order = list(Reason)
    reasons = tuple(
        sorted(
            (r for r in problems if INVESTMENT_FOR[r] is first),
            key=lambda r: (-problems[r], order.index(r)),
        )
    )
    names = _listed([r.value for r in reasons])
    noun = _noun(gate, problems)
    dominant = share >= DOMINANT_SHARE
    if dominant and len(reasons) == 1:
        sentence = (
            f"{names} dominates ({percent(share)}% of {noun}): "
            f"{first} is the next investment."
        )
    elif dominant:
        sentence = f"{names} are {percent(share)}% of {noun}: {first} is the next investment."
    else:
        verb = "leads" if len(reasons) == 1 else "lead"
        sentence = (
            f"No cause dominates: {names} {verb} with {percent(share)}% of {noun}, "
            f"so {first} comes first, then {second} "
            f"({percent(by_investment[second] / total)}%)."
        )
    return Reading(sentence, first, reasons, share, dominant)


# --- The range of days a trends view covers ---------------------------------------------

DEFAULT_RANGE_DAYS = 30
MAX_RANGE_DAYS = 366  # a leap year, both ends included: a year fits, day by day
# No upload predates the board. A floor this far above date.min also keeps every sum the
# charts do on a range (the known-node window reaches 30 days before it, a week bucket
# starts up to 6 days before it) inside the calendar; the latest day, today, is as far
# from date.max.
EARLIEST_DAY = date(2000, 1, 1)
# The trends page once called its range start and end; the API never did.
RENAMED_PARAMETERS = {"start": "from", "end": "to"}

_ISO_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


class RangeProblem(StrEnum):
    NOT_A_DATE = "not_a_date"
    AFTER_TODAY = "after_today"
    BEFORE_EARLIEST = "before_earliest"
    AFTER_TO = "after_to"
    TOO_LONG = "range_too_long"


@dataclass(frozen=True)
class DayRange:
    """The days from ``start`` to ``end``, both included."""

    start: date
    end: date

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1


@dataclass(frozen=True)
class RangeError:
    """Why a range was refused: the parameter ("from" or "to") to change, and a sentence."""

    parameter: str
    problem: RangeProblem
    message: str


def last_days(days: int, today: date) -> DayRange:
    """The ``days`` days ending today."""
    return DayRange(today - timedelta(days=days - 1), today)


def parse_day(text: str) -> date | None:
    """A day written YYYY-MM-DD and nothing else (no time, no week date, no stray
    whitespace), or None."""
    if not _ISO_DAY.fullmatch(text):
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:  # 2026-02-30 and the like
        return None


def day_range(first: str | None, last: str | None, *, today: date) -> DayRange | RangeError:
    """The range the ``from`` (``first``) and ``to`` (``last``) parameters ask for, None
    meaning not sent: by default ``to`` is today and ``from`` the day that makes the range
    DEFAULT_RANGE_DAYS long (never before EARLIEST_DAY).

    Refused: a parameter that is not a YYYY-MM-DD day, ``to`` after today, either before
    EARLIEST_DAY, ``from`` after ``to``, and a range over MAX_RANGE_DAYS days. The first
    problem found is named, ``from`` before ``to``.
    """
    parsed = {}
    for name, text in (("from", first), ("to", last)):
        if text is not None:
            parsed[name] = parse_day(text)
            if parsed[name] is None:
                return RangeError(name, RangeProblem.NOT_A_DATE,
                                  f"{name} must be a day written YYYY-MM-DD, such as {today}.")
    end = parsed.get("to", today)
    if end > today:
        return RangeError("to", RangeProblem.AFTER_TODAY,
                          f"to ({end}) is after today ({today}): a range ends today at the "
                          f"latest.")
    for name, day in parsed.items():
        if day < EARLIEST_DAY:
            return RangeError(name, RangeProblem.BEFORE_EARLIEST,
                              f"{name} ({day}) is before {EARLIEST_DAY}, the earliest day a "
                              f"range may cover.")
    if "from" not in parsed:
        # Computed only now: end is known to be at least EARLIEST_DAY, far from date.min.
        start = max(end - timedelta(days=DEFAULT_RANGE_DAYS - 1), EARLIEST_DAY)
        return DayRange(start, end)
    found = DayRange(parsed["from"], end)
    if found.start > found.end:
        return RangeError("from", RangeProblem.AFTER_TO,
                          f"from ({found.start}) is after to ({found.end}).")
    if found.days > MAX_RANGE_DAYS:
        return RangeError("from", RangeProblem.TOO_LONG,
                          f"The range from {found.start} to {found.end} spans {found.days} "
                          f"days: at most {MAX_RANGE_DAYS}.")
    return found
