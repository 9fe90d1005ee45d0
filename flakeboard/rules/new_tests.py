"""New tests (SPEC 2.4b, amended by docs/new-tests.md): a node is new at a commit when the
board holds no evidence for it from an earlier commit: no measurement, no signal record,
no JUnit result. Commits are ordered as the board first heard of them, so a node's
evidence is summed up by the commit of its first piece: ``first_commit``, None while there
is none, and "" for evidence older than the board's record of it (a node known before
first commits were kept)."""

from __future__ import annotations

from .stats import upper95
from .vocab import Classification

# What a node's first_commit is when its evidence predates the record of first commits.
BEFORE_RECORD = ""


def is_new(first_commit: str | None, commit: str) -> bool:
    """Whether a node whose first evidence came at ``first_commit`` is new at ``commit``:
    it has none, or the first came at this very commit (a rerun of the commit that added
    it is still its birth). A blank first commit is evidence all the same (from before
    the record, or stored without a commit), so such a node is never new, not even at a
    blank commit: else a node first measured without a commit would be new forever."""
    if first_commit is None:
        return True
    return first_commit != BEFORE_RECORD and first_commit == commit


def first_commit_after(first_commit: str | None, commit: str) -> str:
    """A node's first_commit once evidence at ``commit`` is stored: the first stays."""
    return commit if first_commit is None else first_commit


# The fewest runs a new node passes the guard with: EFD's for its slowest tests. Fewer, and
# the budget gate's too_few_runs stands.
NEW_TEST_MIN_RUNS = 3
# A suite's guard (its policy numbers new_test_runs and new_test_share): each new tier-2
# node runs NEW_TEST_RUNS times (fewer when slow, never fewer than NEW_TEST_MIN_RUNS), and
# when more than NEW_TEST_SHARE of a selection is new, only the first ones up to that share
# are measured. NEW_TEST_MAX_RUNS bounds what a suite may ask.
NEW_TEST_RUNS = 30
NEW_TEST_MAX_RUNS = 1000
NEW_TEST_SHARE = 0.30


def flaky_at_birth(n: int, fails: int) -> bool:
    """A new node that both passed and failed in its runs: flaky from the day it was
    written, whatever the runs' number (the guard never lets a flip pass)."""
    return 0 < fails < n


def always_failing(runs: int, failures: int, classification: str | None = None) -> bool:
    """A node that failed every one of its runs (one at least): broken, not flaky. Quarantine
    is for flaky tests (SPEC 2), so it is never offered such a node, and never takes one.
    Unless the measurement found it fails only after other tests (``order_dependent``): it
    passes alone, and its polluter is named."""
    return runs > 0 and failures == runs and classification != Classification.ORDER_DEPENDENT


def passes_the_guard(n: int, fails: int) -> bool:
    """A new node that passed every one of at least NEW_TEST_MIN_RUNS runs: it may enter the
    suite, which says nothing of a budget (its bound is birth_sentence's)."""
    return fails == 0 and n >= NEW_TEST_MIN_RUNS


def birth_sentence(n: int, fails: int) -> str:
    """What a new node's runs show, as every output says it: "new: 0/30 failed, rate ≤
    11.4% at 95%" (the Wilson bound of stats, at 95%)."""
    return f"new: {fails}/{n} failed, rate ≤ {upper95(fails, n):.1%} at 95%"


def catch_chance(rate: float, runs: int) -> float:
    """The chance that ``runs`` runs of a test failing at ``rate`` hold a failure, so that
    the guard does not let it pass: 1 - (1 - rate)^runs (96% for 10% at 30 runs)."""
    return 1.0 - (1.0 - rate) ** runs
