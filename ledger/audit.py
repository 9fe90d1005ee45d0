"""The audit trail and the ledger revision: every service writes its events here, inside
the transaction of its change, and bumps the revision when what the gate is served (or
how it is judged) changes."""

from __future__ import annotations

from django.db.models import F
from django.utils import timezone

from .models import AuditEvent, QuarantineEntry, Suite

# The actor of what the board does by itself (an auto-clear by ``manage.py notify``).
BOARD_ACTOR = "flakeboard"


def entry_snapshot(entry: QuarantineEntry) -> dict:
    """An entry's audited fields, as an event's ``before`` or ``after``."""
    return {
        "owner": entry.owner,
        "expires": entry.expires.isoformat(),
        "evidence": entry.evidence,
        "renewals": entry.renewals,
        "cleared": entry.cleared_at is not None,
    }


def bump_ledger_revision(suite: Suite) -> None:
    Suite.objects.filter(pk=suite.pk).update(ledger_revision=F("ledger_revision") + 1)


def record_event(*, suite, action, actor, entry=None, before=None, after=None, note="", at=None):
    return AuditEvent.objects.create(
        suite=suite,
        entry=entry,
        action=action,
        actor=actor,
        at=at or timezone.now(),
        before=before or {},
        after=after or {},
        note=note,
    )
