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


def resolve_tier(nodeid: str, rules: Iterable[TierRuleSpec]) -> TierResolution:
    """The node's tier: the lowest tier among matching rules; else 2. Only the lead's rules
    decide it: a tier an upload states is the client's word (``tier_disagrees``)."""
    best = TierResolution(Tier.REPEAT_BUDGET)
    for rule in rules:
        if rule.tier < best.tier and fnmatchcase(nodeid, rule.glob):
            best = TierResolution(rule.tier, rule=rule)
    return best


def tier_disagrees(stated: int | None, tier: int) -> bool:
    """A tier an upload stated for a node that is not the one its rules give it: stored and
    flagged, and it changes nothing (a stated tier that decided would let any write token
    void an entry, expired ones included, and drop it from the served ledger)."""
    return stated is not None and stated != tier
