"""Tier rules: adding or removing one re-resolves every node's tier in the suite.

A rule that turns a quarantined node into tier 0/1 makes its entry a tier violation: it
leaves the served ledger and counts as FAIL for the node in the budget gate.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from django.core.exceptions import ValidationError
from django.db import transaction

from flakeboard import rules

from .audit import bump_ledger_revision, record_event
from .locks import lock_suite
from .models import AuditEvent, Node, QuarantineEntry, Suite, TierRule, text_key
from .selectors import tier_rule_specs


def refresh_node_tiers(suite: Suite) -> int:
    """Re-resolve the effective tier of every node of the suite; returns how many changed."""
    specs = tier_rule_specs(suite)
    changed = []
    for node in Node.objects.filter(suite=suite).only("pk", "nodeid", "tier"):
        tier = rules.resolve_tier(node.nodeid, specs).tier
        if tier != node.tier:
            node.tier = tier
            changed.append(node)
    Node.objects.bulk_update(changed, ["tier"], batch_size=500)
    return len(changed)


@dataclass(frozen=True)
class RulePreview:
    matching: list[str]  # known node ids the glob matches
    would_violate: list[QuarantineEntry]  # open entries the rule would turn into violations


def tier_rule_preview(suite: Suite, glob: str, tier: int, limit: int = 50) -> RulePreview:
    nodes = Node.objects.filter(suite=suite).values_list("nodeid", flat=True)
    matching = [nodeid for nodeid in nodes.iterator() if fnmatchcase(nodeid, glob)]
    would_violate = []
    if not rules.quarantinable(tier):
        entries = QuarantineEntry.objects.filter(suite=suite).for_gate().select_related("node")
        would_violate = [e for e in entries if fnmatchcase(e.node.nodeid, glob)]
    return RulePreview(matching[:limit], would_violate)


def _validate(glob: str, tier: int) -> None:
    errors = {}
    if not glob or not glob.strip() or rules.has_control_chars(glob):
        errors["glob"] = "A glob such as tests/test_properties.py::* is required."
    elif len(glob) > rules.NODEID_MAX_LENGTH:
        errors["glob"] = f"A glob may be at most {rules.NODEID_MAX_LENGTH} characters long."
    if tier not in rules.Tier.ALL:
        errors["tier"] = "The tier is 0, 1 or 2."
    if errors:
        raise ValidationError(errors)


def tier_rule_add(*, suite: Suite, glob: str, tier: int, actor: str) -> TierRule:
    _validate(glob, tier)
    with transaction.atomic():
        suite = lock_suite(suite.pk)
        if TierRule.objects.filter(suite=suite, glob_key=text_key(glob)).exists():
            raise ValidationError({"glob": f"A rule for “{glob}” already exists."})
        rule = TierRule.objects.create(suite=suite, glob=glob, tier=tier, created_by=actor)
        refresh_node_tiers(suite)
        record_event(
            suite=suite,
            action=AuditEvent.Action.TIER_RULE,
            actor=actor,
            after={"glob": glob, "tier": tier},
            note="added",
        )
        bump_ledger_revision(suite)
    return rule


def tier_rule_remove(*, rule: TierRule, actor: str) -> None:
    with transaction.atomic():
        suite = lock_suite(rule.suite_id)
        record_event(
            suite=suite,
            action=AuditEvent.Action.TIER_RULE,
            actor=actor,
            before={"glob": rule.glob, "tier": rule.tier},
            note="removed",
        )
        rule.delete()
        refresh_node_tiers(suite)
        bump_ledger_revision(suite)
