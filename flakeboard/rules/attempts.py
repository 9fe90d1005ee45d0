"""Evidence at one commit accumulates (SPEC 2.4a).

- Attempts: the verdict batches of a suite at one ``patch`` and ``commit`` are attempts of
  one gate. A node's evidence over them merges: its property check fails when any attempt's
  failed, passes when one ran and none failed, and is ``not_run`` only when none ran; its
  fixture lock is the worst any attempt had. The arbiter then judges the merged evidence, so
  no retry turns a REJECT into an ACCEPT at the same commit. An attempt that is an
  infrastructure failure (``infrastructure``: its runner broke) counts for the verdict
  like any other, and is never flaky evidence: a node flips only between the others.
- Measurements: the reports of a suite at one ``commit`` pool per node. Runs count once per
  seed: disjoint seed ranges add, and where ranges overlap the seeds they share count once,
  with the larger failure count. The budget gate then judges the pooled counts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from fractions import Fraction
from itertools import pairwise
from typing import NamedTuple

from .arbiter import (
    LOCK_SEVERITY,
    ArbiterOutcome,
    SignalRecord,
    arbitrate,
    effective_flake_status,
    record_flags,
)
from .entries import EntryFacts
from .vocab import FixtureLock, PropertyCheck


@dataclass(frozen=True)
class NodeAttempts:
    """One node's evidence over the attempts of one gate so far: how many attempts sent a
    record of it, the attempts (numbered from 1) whose record failed and passed, the
    worst effective fixture lock any of them had, and which of those attempts were
    infrastructure failures."""

    runs: int = 0
    failed_in: tuple[int, ...] = ()
    passed_in: tuple[int, ...] = ()
    fixture_lock: FixtureLock = FixtureLock.MATCH
    infrastructure_in: tuple[int, ...] = ()

    @property
    def property_check(self) -> PropertyCheck:
        """Failed when any attempt failed; passed when one ran and none failed."""
        if self.failed_in:
            return PropertyCheck.FAIL
        if self.passed_in:
            return PropertyCheck.PASS
        return PropertyCheck.NOT_RUN

    @property
    def flaky_evidence(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The attempts that failed and passed it, left out those that were infrastructure
        failures: what may show it flaky."""
        left_out = set(self.infrastructure_in)
        return (tuple(a for a in self.failed_in if a not in left_out),
                tuple(a for a in self.passed_in if a not in left_out))

    @property
    def flipped(self) -> bool:
        """Failed in one attempt and passed in another, neither an infrastructure failure:
        flaky evidence, as a JUnit flip is."""
        if not self.infrastructure_in:
            return bool(self.failed_in and self.passed_in)
        failed, passed = self.flaky_evidence
        return bool(failed and passed)

    def answer(self) -> dict:
        return {"runs": self.runs, "failed_in": list(self.failed_in),
                "passed_in": list(self.passed_in),
                "infrastructure_in": list(self.infrastructure_in)}

    @classmethod
    def from_answer(cls, answer: dict,
                    fixture_lock: FixtureLock = FixtureLock.MATCH) -> NodeAttempts:
        return cls(answer["runs"], tuple(answer["failed_in"]), tuple(answer["passed_in"]),
                   fixture_lock, tuple(answer.get("infrastructure_in", ())))


def add_attempt(
    prior: NodeAttempts | None, attempt: int, check: PropertyCheck, lock: FixtureLock,
    *, infrastructure: bool = False,
) -> NodeAttempts:
    """``prior`` with one more attempt's record: its property check and effective lock,
    and whether that attempt is an infrastructure failure."""
    prior = prior or NodeAttempts()
    return NodeAttempts(
        runs=prior.runs + 1,
        failed_in=prior.failed_in + ((attempt,) if check is PropertyCheck.FAIL else ()),
        passed_in=prior.passed_in + ((attempt,) if check is PropertyCheck.PASS else ()),
        fixture_lock=max(prior.fixture_lock, lock, key=LOCK_SEVERITY.__getitem__),
        infrastructure_in=prior.infrastructure_in + ((attempt,) if infrastructure else ()),
    )


def merge_attempts(records: Iterable[tuple[PropertyCheck, FixtureLock]]) -> NodeAttempts:
    """A node's evidence over a sequence of attempts, each its (check, effective lock)."""
    merged = NodeAttempts()
    for attempt, (check, lock) in enumerate(records, start=1):
        merged = add_attempt(merged, attempt, check, lock)
    return merged


def judge_attempts(
    latest: SignalRecord,
    merged: NodeAttempts,
    *,
    ledger_entry: EntryFacts | None,
    today: date,
    tier: int | None = None,
) -> ArbiterOutcome:
    """The arbiter (2.3) on a node's merged evidence. Its flake status is as the ledger is
    now, with the claim of the node's latest record (``latest``): a freeze withholds every
    attempt's evidence, both ways. Its flags are those of the latest record, its stated
    tier compared with ``tier``, the node's by the tier rules."""
    status = effective_flake_status(latest.flake_status, latest.freeze_expires, ledger_entry,
                                    today)
    verdict, reason = arbitrate(merged.property_check, merged.fixture_lock, status)
    return ArbiterOutcome(verdict, reason, merged.fixture_lock, status,
                          record_flags(latest, ledger_entry, today, tier=tier))


class SeededCounts(NamedTuple):
    """One measurement's counts and where its seeds start (None: not said, so its runs
    cannot be matched with another's and count as runs of their own)."""

    n: int
    fails: int
    seed_base: int | None = None


class PooledCounts(NamedTuple):
    n: int
    fails: int


def _overlapping_groups(ranges: Sequence[SeededCounts]) -> Iterable[list[SeededCounts]]:
    """The seeded ranges in groups whose seeds connect by overlap, in seed order."""
    group: list[SeededCounts] = []
    end = None
    for counts in sorted(ranges, key=lambda c: c.seed_base):
        if group and counts.seed_base > end:
            yield group
            group = []
        group.append(counts)
        last = counts.seed_base + counts.n - 1
        end = last if len(group) == 1 else max(end, last)
    if group:
        yield group


def _pool_group(group: list[SeededCounts]) -> PooledCounts:
    """Ranges whose seeds overlap, counted over their union. Where a stretch of seeds is
    run by more than one measurement, the one with the larger failure count over that
    stretch counts; a measurement's failures are taken as spread evenly over its seeds (it
    says how many failed, not which), and the total is rounded up."""
    if len(group) == 1:
        return PooledCounts(group[0].n, group[0].fails)
    cuts = sorted({c.seed_base for c in group} | {c.seed_base + c.n for c in group})
    fails = Fraction(0)
    n = 0
    for start, stop in pairwise(cuts):
        covering = [c for c in group if c.seed_base <= start and stop <= c.seed_base + c.n]
        if not covering:
            continue
        n += stop - start
        fails += max(Fraction(c.fails * (stop - start), c.n) for c in covering)
    return PooledCounts(n, math.ceil(fails))


def pool_measurements(measurements: Iterable[SeededCounts]) -> PooledCounts:
    """A node's measurements at one commit as one: each seed's run counted once."""
    unseeded = PooledCounts(0, 0)
    seeded = []
    for counts in measurements:
        if counts.n <= 0:
            continue
        if counts.seed_base is None:
            unseeded = PooledCounts(unseeded.n + counts.n, unseeded.fails + counts.fails)
        else:
            seeded.append(counts)
    pooled = [_pool_group(group) for group in _overlapping_groups(seeded)]
    return PooledCounts(unseeded.n + sum(p.n for p in pooled),
                        unseeded.fails + sum(p.fails for p in pooled))
