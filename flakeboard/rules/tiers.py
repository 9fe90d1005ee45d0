"""Tiers (SPEC 2.5): which nodes may be quarantined at all."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from .vocab import Tier

# The lowest tier a quarantine may cover: below it, an entry is a tier violation.
MIN_QUARANTINABLE_TIER = Tier.REPEAT_BUDGET


def quarantinable(tier: int) -> bool:
    return tier >= MIN_QUARANTINABLE_TIER


@dataclass(frozen=True)
class TierRuleSpec:
    glob: str
    tier: int


@dataclass(frozen=True)
class TierResolution:
    tier: int
    rule: TierRuleSpec | None = None  # the rule that decided, when a rule did
    stated: bool = False  # decided by a tier an upload stated for the node


def resolve_tier(
    nodeid: str, rules: Iterable[TierRuleSpec], stated_tier: int | None = None
) -> TierResolution:
    """The node's tier: the lowest tier among matching rules and a stated 0 or 1; else 2."""
    best = TierResolution(Tier.REPEAT_BUDGET)
    for rule in rules:
        if rule.tier < best.tier and fnmatchcase(nodeid, rule.glob):
            best = TierResolution(rule.tier, rule=rule)
    if stated_tier is not None and stated_tier < best.tier:
        best = TierResolution(stated_tier, stated=True)
    return best


def sticky_tier(current: int | None, stated: int | None) -> int | None:
    """A stated tier 0 or 1 sticks to a node; a stated 2 never loosens it."""
    if stated is None or quarantinable(stated):
        return current
    return stated if current is None else min(current, stated)
