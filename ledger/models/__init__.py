"""Suites, their nodes and tiers, the quarantine ledger, its audit trail and API tokens:
a module per idea (suites, nodes, entries, records), all importable from here.

The node and glob key (``text_key``, ``KeyField``) and ``PolicyDefault`` are defined in
``fields`` and re-exported here: the migrations name them as ``ledger.models``."""

from __future__ import annotations

from .entries import GATE_FIELDS, EntryQuerySet, QuarantineEntry, gate_entry
from .fields import (
    JUNIT_INFRASTRUCTURE_SHARE,
    KEY_LENGTH,
    KeyField,
    PolicyDefault,
    text_key,
)
from .nodes import MeasureTarget, Node, NodeQuerySet, TierRule
from .records import ApiToken, AuditEvent
from .suites import ROLE_RANK, Membership, Role, Suite

__all__ = [
    "GATE_FIELDS", "JUNIT_INFRASTRUCTURE_SHARE", "KEY_LENGTH", "ROLE_RANK", "ApiToken",
    "AuditEvent", "EntryQuerySet", "KeyField", "MeasureTarget", "Membership", "Node",
    "NodeQuerySet", "PolicyDefault", "QuarantineEntry", "Role", "Suite", "TierRule",
    "gate_entry", "text_key",
]
