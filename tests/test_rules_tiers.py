"""SPEC 2.5 (tiers): fnmatch rules per suite, tier 0 over 1 over 2, no rule means tier 2,
and a stated tier 0 or 1 sticks to the node (a stated 2 never loosens it).
"""

from __future__ import annotations

import itertools
from fnmatch import fnmatchcase

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakeboard.rules import Tier, TierResolution, TierRuleSpec, resolve_tier, sticky_tier
from tests.helpers import table
from tests.properties import PROPERTY

PROPS = TierRuleSpec("tests/test_properties.py::*", 0)
PINNED = TierRuleSpec("tests/test_fixtures/*", 1)
INGEST_1 = TierRuleSpec("tests/test_ingest.py::*", 1)
INGEST_0 = TierRuleSpec("tests/test_ingest.py::test_stream_*", 0)
EVERYTHING_2 = TierRuleSpec("*", 2)
EVERYTHING_1 = TierRuleSpec("*", 1)
ONE_CHAR = TierRuleSpec("tests/test_shard_?.py::*", 1)
CHAR_CLASS = TierRuleSpec("tests/test_[ab]*.py::*", 0)

BACKPRESSURE = "tests/test_ingest.py::test_stream_backpressure"
ROUNDTRIP = "tests/test_properties.py::test_roundtrip"


def test_tier_constants() -> None:
    assert (Tier.PROPERTY, Tier.PINNED_FIXTURE, Tier.REPEAT_BUDGET) == (0, 1, 2)
    assert Tier.ALL == (0, 1, 2)


RESOLVE_TABLE = [
    # node, rules, stated tier, expected tier, deciding rule (or "stated" / None)
    pytest.param(ROUNDTRIP, [], None, 2, None, id="no-rules"),
    pytest.param(ROUNDTRIP, [PINNED, INGEST_1], None, 2, None, id="no-rule-matches"),
    pytest.param(ROUNDTRIP, [PROPS], None, 0, PROPS, id="property-glob"),
    pytest.param(
        "tests/test_properties.py::TestCodec::test_roundtrip[utf-8]",
        [PROPS],
        None,
        0,
        PROPS,
        id="glob-star-spans-class-and-params",
    ),
    pytest.param(
        "tests/test_properties_extra.py::test_a",
        [PROPS],
        None,
        2,
        None,
        id="glob-does-not-match-a-longer-file-name",
    ),
    pytest.param(
        "tests/test_fixtures/deep/test_db.py::test_a",
        [PINNED],
        None,
        1,
        PINNED,
        id="glob-star-spans-directories",
    ),
    pytest.param("tests/test_shard_3.py::test_a", [ONE_CHAR], None, 1, ONE_CHAR, id="glob-?"),
    pytest.param("tests/test_shard_12.py::test_a", [ONE_CHAR], None, 2, None, id="glob-?-one"),
    pytest.param("tests/test_beta.py::test_a", [CHAR_CLASS], None, 0, CHAR_CLASS, id="glob-[]"),
    pytest.param("tests/test_gamma.py::test_a", [CHAR_CLASS], None, 2, None, id="glob-[]-miss"),
    pytest.param(
        "tests/TEST_PROPERTIES.py::test_roundtrip", [PROPS], None, 2, None, id="case-sensitive"
    ),
    # tier 0 wins over 1 over 2, whatever the order of the rules
    pytest.param(BACKPRESSURE, [INGEST_1, INGEST_0], None, 0, INGEST_0, id="0-over-1"),
    pytest.param(BACKPRESSURE, [INGEST_0, INGEST_1], None, 0, INGEST_0, id="0-over-1-reversed"),
    pytest.param(BACKPRESSURE, [EVERYTHING_2, INGEST_1], None, 1, INGEST_1, id="1-over-2"),
    pytest.param(BACKPRESSURE, [INGEST_1, EVERYTHING_2], None, 1, INGEST_1, id="1-over-2-rev"),
    pytest.param(
        BACKPRESSURE, [EVERYTHING_2, EVERYTHING_1, INGEST_0], None, 0, INGEST_0, id="0-over-all"
    ),
    pytest.param(
        "tests/test_ingest.py::test_parse",
        [INGEST_1, INGEST_0],
        None,
        1,
        INGEST_1,
        id="narrower-tier-0-glob-misses",
    ),
    # a stated tier
    pytest.param(ROUNDTRIP, [], 0, 0, "stated", id="stated-0"),
    pytest.param(ROUNDTRIP, [], 1, 1, "stated", id="stated-1"),
    pytest.param(ROUNDTRIP, [], 2, 2, None, id="stated-2"),
    pytest.param(BACKPRESSURE, [INGEST_1], 0, 0, "stated", id="stated-0-over-rule-1"),
    pytest.param(BACKPRESSURE, [EVERYTHING_2], 1, 1, "stated", id="stated-1-over-rule-2"),
    pytest.param(BACKPRESSURE, [INGEST_0], 1, 0, INGEST_0, id="rule-0-over-stated-1"),
    pytest.param(BACKPRESSURE, [INGEST_1], 2, 1, INGEST_1, id="stated-2-never-loosens"),
    pytest.param(BACKPRESSURE, [INGEST_0], 2, 0, INGEST_0, id="stated-2-never-loosens-0"),
]


@pytest.mark.parametrize(("nodeid", "rules", "stated", "tier", "decider"), RESOLVE_TABLE)
def test_resolve_tier(
    nodeid: str,
    rules: list[TierRuleSpec],
    stated: int | None,
    tier: int,
    decider: TierRuleSpec | str | None,
) -> None:
    resolution = resolve_tier(nodeid, rules, stated)
    assert resolution.tier == tier
    if decider == "stated":
        assert resolution.stated is True
        assert resolution.rule is None
    elif decider is None:
        assert resolution == TierResolution(Tier.REPEAT_BUDGET)
    else:
        assert resolution.rule == decider
        assert resolution.stated is False


@pytest.mark.parametrize("order", list(itertools.permutations([EVERYTHING_2, INGEST_1, INGEST_0])))
def test_rule_order_does_not_matter(order: tuple[TierRuleSpec, ...]) -> None:
    assert resolve_tier(BACKPRESSURE, order) == TierResolution(0, rule=INGEST_0)


def test_rules_may_be_any_iterable() -> None:
    assert resolve_tier(BACKPRESSURE, iter([INGEST_1, INGEST_0])).tier == 0
    assert resolve_tier(BACKPRESSURE, (r for r in [PROPS])).tier == 2


STICKY_TABLE = table("""
    -   -   -   nothing-stated
    -   2   -   stated-2-does-not-stick
    -   1   1   stated-1-sticks
    -   0   0   stated-0-sticks
    1   -   1   kept-when-not-stated
    0   -   0   0-kept-when-not-stated
    1   2   1   stated-2-never-loosens-1
    0   2   0   stated-2-never-loosens-0
    0   1   0   stated-1-never-loosens-0
    1   0   0   stated-0-tightens-1
    1   1   1   same-again
    2   1   1   stated-1-tightens-2
    2   2   2   2-stays-2
""", int, int, int)  # tier stored on the node, stated tier of an upload, tier stored afterwards


@pytest.mark.parametrize(("current", "stated", "after"), STICKY_TABLE)
def test_sticky_tier(current: int | None, stated: int | None, after: int | None) -> None:
    assert sticky_tier(current, stated) == after


@PROPERTY
@given(
    st.one_of(st.none(), st.sampled_from(Tier.ALL)),
    st.lists(st.one_of(st.none(), st.sampled_from(Tier.ALL)), max_size=6),
)
def test_sticky_tier_never_loosens(current: int | None, stated_tiers: list[int | None]) -> None:
    tier = current
    for stated in stated_tiers:
        new = sticky_tier(tier, stated)
        if tier is not None:
            assert new is not None
            assert new <= tier
        if stated is not None and stated < Tier.REPEAT_BUDGET:
            assert new is not None
            assert new <= stated
        tier = new
    strict = [s for s in [current, *stated_tiers] if s is not None and s < Tier.REPEAT_BUDGET]
    if strict:
        assert tier == min(strict)


# --- the resolved tier is the minimum over matching rules and the stated tier ---------------

NODES = [
    BACKPRESSURE,
    ROUNDTRIP,
    "tests/test_ingest.py::test_parse",
    "tests/test_fixtures/test_db.py::test_migrate[sqlite]",
    "tests/test_shard_3.py::TestA::test_b",
    "tests/test_beta.py::test_a",
]
GLOBS = [
    "*",
    "tests/*",
    "tests/test_properties.py::*",
    "tests/test_ingest.py::*",
    "tests/test_ingest.py::test_stream_*",
    "tests/test_fixtures/*",
    "*::test_a",
    "*[[]sqlite]",
    "tests/test_shard_?.py::*",
    "tests/test_[ab]*.py::*",
    "nomatch/*",
]

nodeids = st.sampled_from(NODES) | st.text(alphabet="ab/:._[]", min_size=1, max_size=12)
globs = st.sampled_from(GLOBS) | st.text(alphabet="ab/:._*?[]!", max_size=8)
rule_specs = st.builds(TierRuleSpec, glob=globs, tier=st.sampled_from(Tier.ALL))


@PROPERTY
@given(
    nodeid=nodeids,
    rules=st.lists(rule_specs, max_size=8),
    stated=st.none() | st.sampled_from(Tier.ALL),
)
def test_resolved_tier_is_the_minimum_over_matching_rules_and_stated_tier(
    nodeid: str, rules: list[TierRuleSpec], stated: int | None
) -> None:
    candidates = [r.tier for r in rules if fnmatchcase(nodeid, r.glob)]
    if stated is not None:
        candidates.append(stated)
    expected = min([*candidates, Tier.REPEAT_BUDGET])

    resolution = resolve_tier(nodeid, rules, stated)
    assert resolution.tier == expected

    # The resolution names what decided it.
    assert not (resolution.stated and resolution.rule is not None)
    if resolution.rule is not None:
        assert resolution.rule in rules
        assert fnmatchcase(nodeid, resolution.rule.glob)
        assert resolution.rule.tier == resolution.tier
    if resolution.stated:
        assert stated == resolution.tier
    if resolution.tier < Tier.REPEAT_BUDGET:
        assert resolution.stated or resolution.rule is not None

    # Neither the order of the rules nor a stated 2 changes the tier.
    assert resolve_tier(nodeid, list(reversed(rules)), stated).tier == expected
    if stated == Tier.REPEAT_BUDGET:
        assert resolve_tier(nodeid, rules, None).tier == expected
