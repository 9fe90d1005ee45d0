"""SPEC 2.4a as pure rules: attempts at one commit merge, measurements at one commit pool."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakeboard import rules
from flakeboard.rules import FixtureLock as Lock
from flakeboard.rules import FlakeStatus as Status
from flakeboard.rules import PropertyCheck as Check
from flakeboard.rules import SeededCounts as Seeded
from tests.properties import PROPERTY

TODAY = date(2026, 12, 4)


def judged(attempts, status=Status.STABLE):
    merged = rules.merge_attempts(attempts)
    latest = rules.SignalRecord("n", Check.PASS, Lock.MATCH, status,
                                freeze_expires=TODAY if status is Status.FROZEN else None)
    return rules.judge_attempts(latest, merged, ledger_entry=None, today=TODAY)


MERGES = [
    # each attempt's (check, lock)                       merged check   lock       verdict
    ([(Check.FAIL, Lock.MATCH), (Check.PASS, Lock.MATCH)], Check.FAIL, Lock.MATCH, "reject"),
    ([(Check.PASS, Lock.MATCH), (Check.FAIL, Lock.MATCH)], Check.FAIL, Lock.MATCH, "reject"),
    ([(Check.NOT_RUN, Lock.MATCH), (Check.PASS, Lock.MATCH)], Check.PASS, Lock.MATCH, "accept"),
    ([(Check.NOT_RUN, Lock.MATCH)] * 3, Check.NOT_RUN, Lock.MATCH, "hold"),
    ([(Check.PASS, Lock.DRIFTED), (Check.PASS, Lock.MATCH)], Check.PASS, Lock.DRIFTED, "hold"),
    ([(Check.PASS, Lock.DRIFTED), (Check.PASS, Lock.MISSING)], Check.PASS, Lock.MISSING,
     "hold"),
    ([(Check.PASS, Lock.MATCH)] * 5, Check.PASS, Lock.MATCH, "accept"),
]  # fmt: skip


@pytest.mark.parametrize(("attempts", "check", "lock", "verdict"), MERGES)
def test_merge_table(attempts, check, lock, verdict):
    merged = rules.merge_attempts(attempts)
    assert (merged.property_check, merged.fixture_lock) == (check, lock)
    assert merged.runs == len(attempts)
    assert judged(attempts).verdict.value == verdict


def test_which_attempts_failed_and_passed():
    merged = rules.merge_attempts([(Check.FAIL, Lock.MATCH), (Check.NOT_RUN, Lock.MATCH),
                                   (Check.PASS, Lock.MATCH)])
    assert merged.answer() == {"runs": 3, "failed_in": [1], "passed_in": [3],
                               "infrastructure_in": []}
    assert merged.flipped
    assert not rules.merge_attempts([(Check.FAIL, Lock.MATCH)] * 2).flipped


def test_a_freeze_withholds_the_merged_failure():
    outcome = judged([(Check.FAIL, Lock.MATCH), (Check.PASS, Lock.MATCH)], Status.FROZEN)
    assert (outcome.verdict, outcome.reason) == (rules.Verdict.HOLD, rules.Reason.FROZEN_NODE)


def test_the_first_attempt_is_judged_as_the_record_alone():
    """An attempt with nothing before it answers exactly what the arbiter says of it."""
    for check in Check:
        for lock in Lock:
            record = rules.SignalRecord("n", check, lock, Status.STABLE)
            alone = rules.evaluate_record(record, ledger_entry=None, pin=None, today=TODAY)
            merged = rules.add_attempt(None, 1, check, alone.fixture_lock)
            assert rules.judge_attempts(record, merged, ledger_entry=None, today=TODAY) == alone


attempt_records = st.lists(st.tuples(st.sampled_from(Check), st.sampled_from(Lock)),
                           min_size=1, max_size=8)


@PROPERTY
@given(attempt_records, st.sampled_from(Status))
def test_accept_only_without_any_executed_failure_or_bad_fixture(attempts, status):
    outcome = judged(attempts, status)
    if outcome.verdict is rules.Verdict.ACCEPT:
        assert all(check is not Check.FAIL for check, _ in attempts)
        assert all(lock is Lock.MATCH for _, lock in attempts)
        assert any(check is Check.PASS for check, _ in attempts)


@PROPERTY
@given(attempt_records, attempt_records)
def test_no_later_attempt_turns_a_reject_into_an_accept(before, after):
    """A later drifted fixture may turn it into a HOLD (the arbiter's precedence), never
    into an ACCEPT."""
    if judged(before).verdict is rules.Verdict.REJECT:
        assert judged(before + after).verdict is not rules.Verdict.ACCEPT


def test_pool_table():
    assert rules.pool_measurements([Seeded(200, 9, 0), Seeded(200, 0, 200)]) == (
        rules.PooledCounts(400, 9))  # disjoint: they add
    assert rules.pool_measurements([Seeded(200, 9, 0), Seeded(200, 0, 0)]) == (
        rules.PooledCounts(200, 9))  # the same seeds: once, the larger count
    assert rules.pool_measurements([Seeded(200, 9, 0), Seeded(200, 1, 100)]) == (
        rules.PooledCounts(300, 10))  # half overlap: 4.5 + max(4.5, 0.5) + 0.5, rounded up
    assert rules.pool_measurements([Seeded(200, 3), Seeded(200, 1)]) == (
        rules.PooledCounts(400, 4))  # seeds not said: runs of their own
    assert rules.pool_measurements([]) == rules.PooledCounts(0, 0)


measurements = st.lists(
    st.integers(1, 300).flatmap(lambda n: st.builds(
        Seeded, st.just(n), st.integers(0, n), st.one_of(st.none(), st.integers(0, 600)))),
    min_size=1, max_size=6)


@PROPERTY
@given(measurements, st.randoms())
def test_pooling_never_hides_a_report(reports, random):
    pooled = rules.pool_measurements(reports)
    worst = max(reports, key=lambda r: rules.upper95(r.fails, r.n))
    assert max(r.fails for r in reports) <= pooled.fails <= min(sum(r.fails for r in reports),
                                                                   pooled.n)
    assert max(r.n for r in reports) <= pooled.n <= sum(r.n for r in reports)
    shuffled = list(reports)
    random.shuffle(shuffled)
    assert rules.pool_measurements(shuffled) == pooled
    # Over the same seeds, pooling is the worst report.
    same = [Seeded(worst.n, r.fails * worst.n // r.n, worst.seed_base or 0) for r in reports]
    again = rules.pool_measurements(same)
    assert rules.upper95(again.fails, again.n) >= max(rules.upper95(r.fails, r.n) for r in same)
    assert again == rules.PooledCounts(worst.n, max(r.fails for r in same))
