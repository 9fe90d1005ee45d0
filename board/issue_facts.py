"""What the board adds to a tracker's issue (trackers.text.FACTS): the node's
top failure signatures from CI's JUnit, and its diagnosis with the reproduction command,
where the board has them. Registered by the board's app config: trackers imports nothing
above it."""

from __future__ import annotations

from django.utils import timezone

from flakeboard.rules.text import plural
from junit.selectors import passive_history
from ledger.models import Node, Suite

from .diagnosis import node_diagnosis


def issue_facts(suite: Suite, node: Node) -> list[str]:
    today = timezone.now().date()
    lines = []
    history = passive_history(node, today)
    if history is not None and history.signatures:
        lines.append("Top failure signatures (CI's JUnit, the last "
                     f"{history.window.days} days):")
        lines += [f"- {signature} ({plural(count, 'failure')})"
                  for signature, count in history.signatures]
    diagnosis = node_diagnosis(suite, node.nodeid, today=today)
    if diagnosis is not None and diagnosis.label:
        lines.append(f"Diagnosis: {diagnosis.label}. " + " ".join(diagnosis.evidence[:2]))
        if diagnosis.command:
            lines.append(f"Reproduce: {diagnosis.command}")
    return lines
