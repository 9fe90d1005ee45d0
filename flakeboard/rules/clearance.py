"""Release when fixed (issue 20): when an open entry is ready to clear, and what it takes.

The gate judges each measurement on its own and never pools them, so "fixed" means: the
node's last K measurements since the entry was created were each within budget, none of
them found to fail only in CI's order (a victim passes on its own), and CI has not seen the
node fail since (a JUnit file or a gate batch). And what it takes to clear is one fresh
measurement that passes: its size, and the chance that it passes at the node's recent
failure rate.

An entry's trail holds both, oldest first: each measurement (report, n, fails, classification,
clean) and each failure CI saw (``ci``: junit or gate, the commit, how many in a row, and
clean false), each with ``at``, the instant its upload was stored (an ISO 8601 string in
UTC, all of one format, so that they sort as text). A sighting is never clean, so the
measurements before it stop counting; one stored with an earlier instant (a backfill) takes
its place among them by time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .budget import Policy, within_budget
from .stats import runs_needed, upper95
from .vocab import Classification

CLEAR_AFTER_DEFAULT = 3
# The most measurements a suite may ask for, and so the most an entry keeps as its trail:
# its last K are all the ready rule ever reads.
CLEAR_AFTER_MAX = 20
# How many of the node's latest measurements its recent failure rate is pooled over.
RECENT_MEASUREMENTS = 5


# What measure may find that says a measurement's runs do not show the node as CI runs it:
# an order-dependent test's own runs can pass while it fails after the tests before it, and
# a broken one fails whatever the runs' count.
NOT_A_FIX = frozenset({Classification.ORDER_DEPENDENT, Classification.BROKEN})


def clean_measurement(n: int, fails: int, classification: Classification | None,
                      policy: Policy) -> bool:
    """Whether a measurement counts toward clearing an entry: within budget, and not
    classified order_dependent or broken."""
    return within_budget(n, fails, policy) and classification not in NOT_A_FIX


def ready_to_clear(clean_since_created: Sequence[bool], k: int) -> bool:
    """An open entry is ready when its node's last ``k`` measurements since the entry was
    created (oldest first) were each within budget; fewer than ``k`` is not ready."""
    if k < 1:
        raise ValueError("k is a count of measurements: 1 or more")
    return len(clean_since_created) >= k and all(clean_since_created[-k:])


def clean_streak(clean_since_created: Sequence[bool]) -> int:
    """How many of the latest measurements in a row were within budget."""
    streak = 0
    for clean in reversed(clean_since_created):
        if not clean:
            break
        streak += 1
    return streak


def trail_after(trail: Sequence, seen, keep: int = CLEAR_AFTER_MAX) -> list:
    """An entry's trail of measurements with one more seen, at most ``keep`` of them: the
    last ``keep`` decide readiness for every k up to ``keep``."""
    return [*trail, seen][-keep:]


def trail_after_ci_failure(trail: Sequence, source: str, commit: str, at: str,
                           keep: int = CLEAR_AFTER_MAX) -> list:
    """An entry's trail after CI saw its node fail (``source``: junit or gate) at
    ``commit``, in an upload stored at ``at``: a sighting, never clean, placed after every
    item stored at or before it (an item without a time is older). Sightings next to each
    other are one, counted, the latest's commit and time kept, so a node that fails in CI
    every day leaves the trail room for its measurements."""
    place = len(trail)
    while place and trail[place - 1].get("at", "") > at:
        place -= 1
    before, after = list(trail[:place]), list(trail[place:])
    if after and after[0].get("ci"):
        return [*before, {**after[0], "count": after[0]["count"] + 1}, *after[1:]]
    seen = {"ci": source, "commit": commit, "count": 1, "clean": False, "at": at}
    if before and before[-1].get("ci"):
        seen["count"] += before.pop()["count"]
    return [*before, seen, *after][-keep:]


def last_ci_failure(trail: Sequence) -> dict | None:
    """The failure CI saw since the node's last measurement, if it saw one."""
    return trail[-1] if trail and trail[-1].get("ci") else None


def is_measurement(seen) -> bool:
    """Whether an item of an entry's trail is a measurement (else CI's sighting)."""
    return not seen.get("ci")


def step_report(seen) -> int | None:
    """The report a step of an entry's trail cites. A measurement cites the report it came
    in; a failure CI saw cites none, since it came in a JUnit file or a gate batch, which
    the step names by its commit only. A measurement kept without its report (a trail
    older than reports' ids in it) cites none either. The one reader that knows each kind
    of step, so that whatever follows a trail's citations (retention, a clearance's note)
    reads every kind alike."""
    if not is_measurement(seen):
        return None
    return seen.get("report")


def trail_reports(trail: Iterable) -> list[int]:
    """The reports an entry's trail cites, oldest first."""
    return [report for report in map(step_report, trail) if report is not None]


def allowed_failures(n: int, max_upper_rate: float) -> int | None:
    """The most failures a measurement of ``n`` runs may hold and stay within the budget's
    bound, or None when even none would not (``n`` is too small)."""
    if n < 1 or upper95(0, n) > max_upper_rate:
        return None
    low, high = 0, n  # upper95 grows with fails: the last f within the rate
    while low < high:
        middle = (low + high + 1) // 2
        if upper95(middle, n) <= max_upper_rate:
            low = middle
        else:
            high = middle - 1
    return low


def pass_chance(p: float, n: int, allowed: int | None) -> float:
    """The binomial chance of at most ``allowed`` failures in ``n`` runs that each fail
    with probability ``p``; 0 when no count of failures is allowed."""
    if allowed is None or allowed < 0:
        return 0.0
    if allowed >= n or p <= 0:
        return 1.0
    if p >= 1:
        return 0.0
    log_p, log_q = math.log(p), math.log1p(-p)
    log_n = math.lgamma(n + 1)

    def term(k: int) -> float:
        return math.exp(log_n - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * log_p
                        + (n - k) * log_q)

    # Each term carries the rounding of its log-gamma (about 1e-12 of it for n in the
    # thousands): summed where the chance is near 1, that is 1e-12 of the chance itself.
    # There, 1 less the small upper tail keeps the error to the tail's.
    if allowed >= n * p:
        return min(1.0, max(0.0, 1.0 - math.fsum(term(k) for k in range(allowed + 1, n + 1))))
    return min(1.0, max(0.0, math.fsum(term(k) for k in range(allowed + 1))))


def recent_rate(measurements: Iterable[tuple[int, int]]) -> float | None:
    """The failure rate pooled over (n, fails) measurements; None without any run."""
    runs = fails = 0
    for n, failed in measurements:
        runs += n
        fails += failed
    return fails / runs if runs else None


@dataclass(frozen=True)
class ClearanceOutlook:
    """What a fresh measurement needs to clear an entry, and its chance to pass."""

    min_runs: int  # the policy's smallest measurement
    clean_runs: int  # the fewest runs with no failure whose bound is within the budget
    runs: int  # the size to measure: the larger of the two
    allowed_failures: int | None  # at that size
    rate: float | None  # the node's recent failure rate
    chance: float | None  # that a measurement of that size passes at that rate


def clearance_outlook(policy: Policy, rate: float | None) -> ClearanceOutlook:
    clean_runs = runs_needed(policy.max_upper_rate)
    runs = max(policy.min_runs, clean_runs)
    allowed = allowed_failures(runs, policy.max_upper_rate)
    chance = None if rate is None else pass_chance(rate, runs, allowed)
    return ClearanceOutlook(policy.min_runs, clean_runs, runs, allowed, rate, chance)
