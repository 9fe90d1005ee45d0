"""Reading a reason-code distribution: which causes dominate, and what to invest in next.

Every non-clean reason code points at one investment: fixture trouble at fixture pinning,
frozen and over-budget nodes at flake removal, and so on. Over a range of verdicts (or of
budget-gate outcomes), the investment whose reason codes hold the largest share of the
problems is the next one; when that share is at least half, its codes dominate.

The noun a sentence uses ("holds", "rejects", "failures", ...) is read off the gate rules
themselves, so this module never restates which reason comes with which verdict.

It also gives the tone (fail, warn, ok) every chart and bar of a reason code is drawn in,
read off the same rules, and what the retries charts count: an attempt after a REJECT at
the same commit, and the attempt where a node first flipped. The range of days a trends
view covers is in trends_range.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from enum import StrEnum
from functools import cache
from itertools import product

import flakeboard.rules as rules

from .vocab import Reason

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
    Reason.NEW_TEST_CLEAN: None,
    Reason.NEW_TEST_FLAKY: Investment.FLAKE_REMOVAL,
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
    samples = [(policy.min_runs * 10, 0), (1, 0), (policy.min_runs, policy.min_runs),
               (rules.NEW_TEST_MIN_RUNS, 0), (rules.NEW_TEST_MIN_RUNS, 1)]
    found = {}
    for entry, (n, fails), new in product(entries, samples, (False, True)):
        outcome = rules.gate_measurement(n=n, fails=fails, entry=entry, policy=policy,
                                         today=today, new=new)
        found[outcome.reason] = outcome.status
    empty = rules.gate_report([], share=rules.ShareFigures(0, 1, policy.max_quarantined_share))
    over = rules.gate_report(
        [rules.BudgetOutcome(rules.GateStatus.OK, Reason.WITHIN_BUDGET)],
        share=rules.ShareFigures(1, 1, cap=0.0),
    )
    found[empty.reason] = empty.status
    found[over.reason] = over.status
    return found


class Tone(StrEnum):
    """The one colour scale of the board: FAIL and REJECT, WARN and HOLD, OK and ACCEPT, and
    neutral for what is no outcome. Pages draw a tone with the CSS custom property
    ``--tone-<tone>`` (static/css/board.css)."""

    FAIL = "fail"
    WARN = "warn"
    OK = "ok"
    NEUTRAL = "neutral"


TONE_OF_OUTCOME: dict[rules.Verdict | rules.GateStatus, Tone] = {
    rules.Verdict.REJECT: Tone.FAIL,
    rules.Verdict.HOLD: Tone.WARN,
    rules.Verdict.ACCEPT: Tone.OK,
    rules.GateStatus.FAIL: Tone.FAIL,
    rules.GateStatus.WARN: Tone.WARN,
    rules.GateStatus.OK: Tone.OK,
}


def tone_of(gate: Gate, reason: str) -> Tone:
    """The tone of a reason code on ``gate``: that of the outcome the gate's rules give it
    (no_evidence holds a batch but fails a report)."""
    return TONE_OF_OUTCOME[outcome_of(gate)[Reason(reason)]]


def shade_of(gate: Gate, reason: str) -> int:
    """Which of its tone's shades a reason code is drawn in: its place among the gate's
    codes of that tone, so that a code keeps one colour on every chart and range."""
    tone = tone_of(gate, reason)
    return [r for r in gate.reasons if tone_of(gate, r) is tone].index(Reason(reason))


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


# --- Retries at one commit (SPEC 2.4a) -------------------------------------------------

# A retry after a REJECT: an attempt at a patch and commit whose previous attempt there
# already answered REJECT. The SQL that counts them (runs/trend_counts.py) is built from
# these two names, and a property test holds it to ``retried_after_reject``.
FIRST_RETRY = 2
RETRIED_AFTER = rules.Verdict.REJECT


def retried_after_reject(attempt: int, previous_verdict: str | None) -> bool:
    """Whether attempt ``attempt`` retried a gate its previous attempt, which answered
    ``previous_verdict`` (None: none is stored), had already rejected."""
    return attempt >= FIRST_RETRY and previous_verdict == RETRIED_AFTER


def first_flip(failed_in: Sequence[int], passed_in: Sequence[int]) -> int | None:
    """The attempt where a node first flipped: the first by which it had both failed and
    passed (None: it never flipped). A flip is counted once, at that attempt. Given a
    node's flaky evidence (``NodeAttempts.flaky_evidence``): an attempt that was an
    infrastructure failure never makes a flip."""
    if not (failed_in and passed_in):
        return None
    return max(min(failed_in), min(passed_in))
