"""GET /api/v1/suites/{suite}/entries/{id}/events: a quarantine entry's audit trail, oldest
first, as the entry page's history shows it: who did what, when, what changed, and why."""

from __future__ import annotations

from datetime import datetime

from ninja import Router, Schema
from pydantic import Field

from ledger.api.auth import Scope, suite_for_token
from web.api.errors import ApiError, ErrorOut

from ..models import AuditEvent, QuarantineEntry

router = Router(tags=["ledger"])

EVENT_FIELDS = ("action", "actor", "at", "before", "after", "note")


class EventOut(Schema):
    action: AuditEvent.Action
    actor: str = Field(description="A user (@handle), or a token (token <prefix> (name)).")
    at: datetime
    before: dict = Field(description="The changed fields' values before the change.")
    after: dict = Field(description="The changed fields' values after it.")
    note: str


class EntryEvents(Schema):
    entry: int
    node: str
    events: list[EventOut] = Field(description="Oldest first.")


@router.get(
    "/suites/{suite}/entries/{int:id}/events",
    response={200: EntryEvents, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut},
    summary="A ledger entry's audit trail",
    description=(
        "Every change to the entry (made, imported, renewed, cleared), oldest first: the "
        "action, who, when, the fields before and after, and the note. Events are "
        "append-only. 404 for an id of no entry of this suite. Needs a read (or write) "
        "token of the suite."
    ),
)
def entry_events(request, suite: str, id: int):
    suite = suite_for_token(request, suite, Scope.READ)
    node = (QuarantineEntry.objects.filter(suite=suite, pk=id)
            .values_list("node__nodeid", flat=True).first())
    if node is None:
        raise ApiError(404, "not_found", f"This suite has no ledger entry {id}.")
    events = AuditEvent.objects.filter(entry_id=id).order_by("at", "id").values(*EVENT_FIELDS)
    return {"entry": id, "node": node, "events": list(events)}
