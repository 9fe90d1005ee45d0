"""Reads of the ledger: the served gate ledger, the quarantined share, entry facts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from django.db.models import Count, Exists, OuterRef, Q

from flakeboard import rules

from .models import GATE_FIELDS, Node, QuarantineEntry, Suite, gate_entry


def tier_rule_specs(suite: Suite) -> list[rules.TierRuleSpec]:
    pairs = suite.tier_rules.values_list("glob", "tier")
    return [rules.TierRuleSpec(glob, tier) for glob, tier in pairs]


def tier_resolution(suite: Suite, nodeid: str, node: Node | None = None) -> rules.TierResolution:
    stated = node.stated_tier if node is not None else None
    return rules.resolve_tier(nodeid, tier_rule_specs(suite), stated)


def known_nodes(suite: Suite, today: date):
    """Nodes seen in an upload in the last 30 days, or holding an open entry."""
    cutoff = today - timedelta(days=rules.KNOWN_NODE_WINDOW_DAYS)
    open_entry = QuarantineEntry.objects.filter(node=OuterRef("pk"), cleared_at__isnull=True)
    return Node.objects.filter(suite=suite).filter(Q(last_seen__gte=cutoff) | Exists(open_entry))


@dataclass(frozen=True)
class ShareFigures:
    quarantined: int
    size: int
    cap: float

    @property
    def share(self) -> float:
        return rules.quarantined_share(self.quarantined, self.size)

    @property
    def over_cap(self) -> bool:
        return self.share > self.cap + 1e-12

    @property
    def headroom(self) -> int:
        """How many more entries fit under the cap."""
        return max(0, int(self.cap * self.size + 1e-9) - self.quarantined)


def share_figures(
    suite: Suite,
    today: date,
    *,
    selected_total: int | None = None,
    extra_node: str | None = None,
) -> ShareFigures:
    """The quarantined share of the test set (SPEC 2.2).

    ``extra_node`` is a node about to be quarantined: it belongs to the test set even if
    no upload has named it yet.
    """
    quarantined = QuarantineEntry.objects.filter(suite=suite).counting_for_share(today).count()
    if selected_total is not None:
        size = selected_total
    else:
        nodes = known_nodes(suite, today)
        size = nodes.count()
        if extra_node is not None and not nodes.filter(nodeid=extra_node).exists():
            size += 1
    return ShareFigures(quarantined, size, suite.max_quarantined_share)


def open_entries_by_node(suite: Suite, node_ids=None) -> dict[int, QuarantineEntry]:
    """Open entries keyed by node pk, with their node (and so their tier) loaded."""
    entries = QuarantineEntry.objects.filter(suite=suite).open().select_related("node")
    if node_ids is not None:
        entries = entries.filter(node_id__in=node_ids)
    return {entry.node_id: entry for entry in entries}


def ledger_for_gate(suite: Suite) -> dict[str, dict]:
    """The served ledger, in exactly the flake_ledger.json shape (SPEC 3.3), read as plain
    values rather than an entry and a node object per row."""
    rows = (
        QuarantineEntry.objects.filter(suite=suite)
        .for_gate()
        .order_by("node__nodeid")
        .values_list("node__nodeid", *GATE_FIELDS)
    )
    return {nodeid: gate_entry(*values) for nodeid, *values in rows}


def entry_counts(suite: Suite, today: date) -> dict[str, int]:
    """Open entries per state, counted in one query."""
    horizon = today + timedelta(days=rules.EXPIRING_WITHIN_DAYS)
    gate = Q(node__tier=rules.Tier.REPEAT_BUDGET)
    return QuarantineEntry.objects.filter(suite=suite).open().aggregate(
        active=Count("pk", filter=gate & Q(expires__gt=horizon)),
        expiring=Count("pk", filter=gate & Q(expires__gte=today, expires__lte=horizon)),
        expired=Count("pk", filter=gate & Q(expires__lt=today)),
        tier_violation=Count("pk", filter=Q(node__tier__lt=rules.Tier.REPEAT_BUDGET)),
    )
