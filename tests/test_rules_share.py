"""One exact comparison of a share with its limit (flakeboard/rules/share.py), for the
quarantine cap and the JUnit infrastructure share alike; and the share figures spelled
once, as both API answers that carry them describe them."""

from __future__ import annotations

from fractions import Fraction

import pytest

from flakeboard.rules import (
    INFRASTRUCTURE_MIN_TESTS,
    FailingTests,
    ShareFigures,
    infrastructure_reason,
    share_over_cap,
    share_over_limit,
)
from ledger.api.schemas import ShareNowOut
from runs.api.schemas import ShareOut
from tests.helpers import ratio, table, yes


@pytest.mark.parametrize(("share", "limit", "over"), table("""
    0       0      no    nothing-of-nothing
    1/100   0      yes   anything-over-zero
    1/20    0.05   no    1-of-20-at-0.05
    3/10    0.3    no    3-of-10-at-0.3
    8/10    0.8    no    8-of-10-at-0.8
    9/10    0.8    yes   9-of-10-over-0.8
    1/19    0.05   yes   1-of-19-over-0.05
    1/3     1/3    yes   a-third-over-its-float-as-written
    1       1      no    all-at-one
""", Fraction, ratio, yes))
def test_a_share_against_its_limit_exactly(share, limit, over):
    assert share_over_limit(share, limit) is over


@pytest.mark.parametrize(("never_passed", "ran", "limit"), [
    (1, 20, 0.05), (3, 10, 0.3), (8, 10, 0.8), (9, 10, 0.8), (1, 19, 0.05), (10, 10, 1.0)])
def test_the_cap_and_the_infrastructure_share_compare_alike(never_passed, ran, limit):
    """Whatever the numbers, a quarantined share and a failing share over the same limit
    are judged the same: one comparison."""
    assert ran >= INFRASTRUCTURE_MIN_TESTS
    flagged = infrastructure_reason(FailingTests(ran, never_passed), errors_outside_tests=0,
                                    share=limit)
    assert bool(flagged) is share_over_cap(never_passed, ran, limit)


def test_the_figures_are_spelled_as_both_answers_describe_them():
    """The upload's answer adds where the size came from, as the report stored it, and
    the size the report stated (shown, never deciding); the
    status endpoint's, where it comes from now and the headroom. The rest is the figures'
    one spelling."""
    spelled = ShareFigures(3, 40, 0.05).answer()
    assert spelled == {"quarantined": 3, "test_set_size": 40, "share": 0.075, "cap": 0.05,
                       "over_cap": True}
    assert set(spelled) | {"size_source", "size_commit", "selected_total"} == set(
        ShareOut.model_fields)
    where = ShareFigures(3, 40, 0.05).source_answer()
    assert where == {"size_source": "known_nodes", "ci_run": None}
    assert set(spelled) | set(where) | {"headroom"} == set(ShareNowOut.model_fields)
    assert ShareFigures(1, 3, 0.5).answer()["share"] == 0.333333  # rounded as answered
