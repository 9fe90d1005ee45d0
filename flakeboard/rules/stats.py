"""The Wilson score bounds (SPEC 2.1) and the run count they imply; Fisher's exact test
(SPEC 2.4d), one-sided, for one rate above another."""

from __future__ import annotations

import math

Z95 = 1.96
UPPER95_TOLERANCE = 0.0005


def _wilson(fails: int, n: int, z: float, sign: int) -> float:
    p = fails / n
    z2 = z * z
    centre = p + z2 / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return min(1.0, max(0.0, (centre + sign * margin) / (1 + z2 / n)))


def upper95(fails: int, n: int, z: float = Z95) -> float:
    """Upper limit of the Wilson score interval for fails/n, clipped to [0, 1]."""
    if n <= 0 or fails >= n:
        return 1.0
    return _wilson(fails, n, z, 1)


def lower95(fails: int, n: int, z: float = Z95) -> float:
    """Lower limit of the Wilson score interval for fails/n, clipped to [0, 1]: 0 with no
    failure or no run."""
    if n <= 0 or fails <= 0:
        return 0.0
    return _wilson(min(fails, n), n, z, -1)


def upper95_mismatch(reported: float | None, fails: int, n: int) -> bool:
    """A reported bound that differs from the server's by more than the tolerance."""
    return reported is not None and abs(reported - upper95(fails, n)) > UPPER95_TOLERANCE


def runs_needed(max_upper_rate: float, z: float = Z95) -> int:
    """Consecutive clean runs after which the Wilson bound is at or below max_upper_rate.

    With no failures the bound is z²/(n + z²), so n >= z²(1 - rate)/rate.
    """
    if max_upper_rate <= 0:
        raise ValueError("max_upper_rate must be above 0")
    if max_upper_rate >= 1:
        return 1
    n = max(1, math.ceil(z * z * (1 - max_upper_rate) / max_upper_rate - 1e-9))
    while upper95(0, n, z) > max_upper_rate:
        n += 1
    while n > 1 and upper95(0, n - 1, z) <= max_upper_rate:
        n -= 1
    return n


def fisher_greater(fails: int, n: int, other_fails: int, other_n: int) -> float:
    """Fisher's exact test, one-sided: the chance that, of all the failures of both groups
    (fails of n runs, other_fails of other_n), at least ``fails`` fall in the first group's
    n runs if failing had nothing to do with the group. Exact: the hypergeometric tail,
    summed in integers (``math.comb``) and divided once. 1.0 with no run or no failure."""
    failures, runs = fails + other_fails, n + other_n
    if runs <= 0 or failures <= 0:
        return 1.0
    passes = runs - failures
    tail = sum(math.comb(failures, k) * math.comb(passes, n - k)
               for k in range(fails, min(failures, n) + 1))
    return tail / math.comb(runs, n)
