"""The Wilson score bounds, as the board computes them (SPEC 2.1), and what a new test's runs
show in the board's words: shared by the outputs and the measurement."""

from __future__ import annotations

import math

Z95 = 1.96


def _wilson(fails, n, z, side):
    p = fails / n
    z2 = z * z
    centre = p + z2 / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return min(1.0, max(0.0, (centre + side * margin) / (1 + z2 / n)))


def upper95(fails, n, z=Z95):
    """The Wilson score interval's upper limit, as the board computes it (SPEC 2.1)."""
    return 1.0 if n <= 0 or fails >= n else _wilson(fails, n, z, +1)


def lower95(fails, n, z=Z95):
    """The Wilson score interval's lower limit: the rate the runs show with 95% confidence."""
    return 0.0 if n <= 0 or fails <= 0 else _wilson(fails, n, z, -1)


# The fewest runs with which a new node passes the new-test guard (the board's).
NEW_TEST_MIN_RUNS = 3


def birth_sentence(n, fails):
    """What a new node's runs show, as the board says it (rules.birth_sentence)."""
    return f"new: {fails}/{n} failed, rate ≤ {upper95(fails, n):.1%} at 95%"


def fisher_greater(fails, n, other_fails, other_n):
    """Fisher's exact test, one-sided, as the board computes it (rules.fisher_greater): the
    chance that at least ``fails`` of both groups' failures fall in the first group's ``n``
    runs if failing had nothing to do with the group. 1.0 with no run."""
    failures, runs = fails + other_fails, n + other_n
    if n <= 0 or runs <= 0:
        return 1.0
    tail = sum(math.comb(n, k) * math.comb(other_n, failures - k)
               for k in range(max(fails, failures - other_n), min(failures, n) + 1))
    return min(1.0, tail / math.comb(runs, failures))
