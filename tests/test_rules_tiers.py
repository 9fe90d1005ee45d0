"""SPEC 2.5 (tiers): fnmatch rules per suite, tier 0 over 1 over 2, no rule means tier 2.
Only the rules decide: a tier an upload states is compared with them (``tier_disagrees``)
and changes nothing.
"""

from __future__ import annotations

import itertools
from fnmatch import fnmatchcase

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakeboard.rules import Tier, TierResolution, TierRuleSpec, resolve_tier, tier_disagrees
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
    # node, rules, expected tier, deciding rule (None: no rule matched)
    pytest.param(ROUNDTRIP, [], 2, None, id="no-rules"),
    pytest.param(ROUNDTRIP, [PINNED, INGEST_1], 2, None, id="no-rule-matches"),
    pytest.param(ROUNDTRIP, [PROPS], 0, PROPS, id="property-glob"),
    pytest.param(
        "tests/test_properties.py::TestCodec::test_roundtrip[utf-8]",
        [PROPS],
        0,
        PROPS,
        id="glob-star-spans-class-and-params",
    ),
    pytest.param(
        "tests/test_properties_extra.py::test_a",
        [PROPS],
        2,
        None,
        id="glob-does-not-match-a-longer-file-name",
    ),
    pytest.param(
        "tests/test_fixtures/deep/test_db.py::test_a",
        [PINNED],
        1,
        PINNED,
        id="glob-star-spans-directories",
    ),
    pytest.param("tests/test_shard_3.py::test_a", [ONE_CHAR], 1, ONE_CHAR, id="glob-?"),
    pytest.param("tests/test_shard_12.py::test_a", [ONE_CHAR], 2, None, id="glob-?-one"),
    pytest.param("tests/test_beta.py::test_a", [CHAR_CLASS], 0, CHAR_CLASS, id="glob-[]"),
    pytest.param("tests/test_gamma.py::test_a", [CHAR_CLASS], 2, None, id="glob-[]-miss"),
    pytest.param(
        "tests/TEST_PROPERTIES.py::test_roundtrip", [PROPS], 2, None, id="case-sensitive"
    ),
    # tier 0 wins over 1 over 2, whatever the order of the rules
    pytest.param(BACKPRESSURE, [INGEST_1, INGEST_0], 0, INGEST_0, id="0-over-1"),
    pytest.param(BACKPRESSURE, [INGEST_0, INGEST_1], 0, INGEST_0, id="0-over-1-reversed"),
    pytest.param(BACKPRESSURE, [EVERYTHING_2, INGEST_1], 1, INGEST_1, id="1-over-2"),
    pytest.param(BACKPRESSURE, [INGEST_1, EVERYTHING_2], 1, INGEST_1, id="1-over-2-rev"),
    pytest.param(
        BACKPRESSURE, [EVERYTHING_2, EVERYTHING_1, INGEST_0], 0, INGEST_0, id="0-over-all"
    ),
    pytest.param(
        "tests/test_ingest.py::test_parse",
        [INGEST_1, INGEST_0],
        1,
        INGEST_1,
        id="narrower-tier-0-glob-misses",
    ),
]


@pytest.mark.parametrize(("nodeid", "rules", "tier", "decider"), RESOLVE_TABLE)
def test_resolve_tier(
    nodeid: str,
    rules: list[TierRuleSpec],
    tier: int,
    decider: TierRuleSpec | None,
) -> None:
    resolution = resolve_tier(nodeid, rules)
    assert resolution.tier == tier
    if decider is None:
        assert resolution == TierResolution(Tier.REPEAT_BUDGET)
    else:
        assert resolution.rule == decider


@pytest.mark.parametrize("order", list(itertools.permutations([EVERYTHING_2, INGEST_1, INGEST_0])))
def test_rule_order_does_not_matter(order: tuple[TierRuleSpec, ...]) -> None:
    assert resolve_tier(BACKPRESSURE, order) == TierResolution(0, rule=INGEST_0)


def test_rules_may_be_any_iterable() -> None:
    assert resolve_tier(BACKPRESSURE, iter([INGEST_1, INGEST_0])).tier == 0
    assert resolve_tier(BACKPRESSURE, (r for r in [PROPS])).tier == 2


DISAGREES_TABLE = table("""
    -   2   no    nothing-stated
    -   0   no    nothing-stated-tier-0
    2   2   no    stated-as-the-rules-say
    0   0   no    stated-0-as-a-rule-says
    1   1   no    stated-1-as-a-rule-says
    0   2   yes   stated-0-for-a-tier-2-node
    1   2   yes   stated-1-for-a-tier-2-node
    2   0   yes   stated-2-for-a-tier-0-node
    1   0   yes   stated-1-for-a-tier-0-node
    0   1   yes   stated-0-for-a-tier-1-node
""", int, int, lambda cell: cell == "yes")  # stated tier, the rules' tier, flagged


@pytest.mark.parametrize(("stated", "tier", "flagged"), DISAGREES_TABLE)
def test_tier_disagrees(stated: int | None, tier: int, flagged: bool) -> None:
    assert tier_disagrees(stated, tier) is flagged


# --- the resolved tier is the minimum over matching rules -----------------------------------

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
def test_resolved_tier_is_the_minimum_over_matching_rules(
    nodeid: str, rules: list[TierRuleSpec], stated: int | None
) -> None:
    expected = min([*(r.tier for r in rules if fnmatchcase(nodeid, r.glob)),
                    Tier.REPEAT_BUDGET])

    resolution = resolve_tier(nodeid, rules)
    assert resolution.tier == expected

    # The resolution names the rule that decided it.
    if resolution.rule is not None:
        assert resolution.rule in rules
        assert fnmatchcase(nodeid, resolution.rule.glob)
        assert resolution.rule.tier == resolution.tier
    if resolution.tier < Tier.REPEAT_BUDGET:
        assert resolution.rule is not None

    # Neither the order of the rules nor a stated tier changes it; a stated tier is only
    # flagged where it differs.
    assert resolve_tier(nodeid, list(reversed(rules))).tier == expected
    assert tier_disagrees(stated, resolution.tier) is (stated is not None and stated != expected)
