"""An entry's ticket: the issue where the work to fix its node is tracked. The trackers
app opens the issue and calls here to link it, and to say when the tracker shows it
closed while the entry is open; the ledger imports nothing of that app."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from .audit import bump_ledger_revision, record_event
from .locks import lock_suite
from .models import AuditEvent, QuarantineEntry


def entry_ticket_set(*, entry: QuarantineEntry, url: str, actor: str,
                     closed_at: datetime | None = None) -> QuarantineEntry:
    """Link ``url`` as the entry's ticket, or mark it closed in its tracker
    (``closed_at``); audited, and the full ledger view's revision bumped. Closing a
    ticket never clears the entry: its owner decides."""
    with transaction.atomic():
        lock_suite(entry.suite_id)
        locked = QuarantineEntry.objects.select_related("suite").get(pk=entry.pk)
        before = {"ticket": locked.ticket, "ticket_closed": locked.ticket_closed_at is not None}
        locked.ticket, locked.ticket_closed_at = url, closed_at
        after = {"ticket": locked.ticket, "ticket_closed": closed_at is not None}
        if before == after:
            return locked
        locked.save(update_fields=["ticket", "ticket_closed_at"])
        note = "ticket closed in the tracker" if closed_at else "ticket linked"
        record_event(suite=locked.suite, entry=locked, action=AuditEvent.Action.TICKET,
                     actor=actor, before=before, after=after, note=note)
        bump_ledger_revision(locked.suite)
    return locked
