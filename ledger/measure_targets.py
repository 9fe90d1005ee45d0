"""Measurement targets: the nodes a suite's owners marked to measure.

Marking or unmarking a node writes an audit event in the same transaction. Neither changes
the gate: a target is a request for evidence, and only a measurement's Wilson bound can
put a node over its budget.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from .audit import record_event
from .models import AuditEvent, MeasureTarget, Node, Suite


def _node(suite: Suite, nodeid: str) -> Node:
    node = Node.objects.filter(suite=suite).named(nodeid).first()
    if node is None:
        raise ValidationError(f"{nodeid} is not a node of this suite.", code="unknown_node")
    return node


def measure_target_set(*, suite: Suite, nodeid: str, actor: str, marked: bool) -> bool:
    """Mark (or unmark) a node to measure; answers whether anything changed. Marking a
    marked node, or unmarking one that is not, changes nothing and writes no event."""
    with transaction.atomic():
        node = _node(suite, nodeid)
        if marked:
            _, changed = MeasureTarget.objects.get_or_create(
                node=node, defaults={"suite": suite, "added_at": timezone.now(),
                                     "added_by": actor})
        else:
            changed = MeasureTarget.objects.filter(node=node).delete()[0] > 0
        if changed:
            record_event(suite=suite, action=AuditEvent.Action.TARGET, actor=actor,
                         before={"measure": nodeid} if not marked else {},
                         after={"measure": nodeid} if marked else {})
    return changed


def marked_nodeids(suite: Suite) -> list[str]:
    """The marked nodes' ids, the first marked first."""
    return list(MeasureTarget.objects.filter(suite=suite).values_list("node__nodeid", flat=True))
