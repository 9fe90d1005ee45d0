"""Suites, their nodes and tiers, the quarantine ledger, its audit trail and API tokens,
CI's runs that size the test set, the scheduled jobs' lock rows: a module per idea (suites,
nodes, entries, records, ci_runs, job_locks), all importable from here.

The node and glob key (``text_key``, ``KeyField``), the written form's key
(``written_key``, ``WrittenKeyField``) and ``PolicyDefault`` are defined in
``fields`` and re-exported here: the migrations name them as ``ledger.models``."""

from __future__ import annotations

from .ci_runs import CiRun
from .entries import GATE_FIELDS, EntryQuerySet, QuarantineEntry, gate_entry
from .fields import (
    JUNIT_INFRASTRUCTURE_SHARE,
    KEY_LENGTH,
    KeyField,
    PolicyDefault,
    WrittenKeyField,
    branch_name,
    node_written_key,
    text_key,
    written_key,
)
from .job_locks import JobLock
from .nodes import MeasureTarget, Node, NodeQuerySet, TierRule
from .records import ApiToken, AuditEvent
from .suites import ROLE_RANK, Membership, Role, Suite
from .trust import TrustPolicy

__all__ = [
    "GATE_FIELDS",
    "JUNIT_INFRASTRUCTURE_SHARE",
    "KEY_LENGTH",
    "ROLE_RANK",
    "ApiToken",
    "AuditEvent",
    "CiRun",
    "EntryQuerySet",
    "JobLock",
    "KeyField",
    "MeasureTarget",
    "Membership",
    "Node",
    "NodeQuerySet",
    "PolicyDefault",
    "QuarantineEntry",
    "Role",
    "Suite",
    "TierRule",
    "TrustPolicy",
    "WrittenKeyField",
    "branch_name",
    "gate_entry",
    "node_written_key",
    "text_key",
    "written_key",
]
