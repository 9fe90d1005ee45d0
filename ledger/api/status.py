"""The suite's gate status now: passing or failing, and why, in one small answer."""

from __future__ import annotations

from django.utils import timezone
from ninja import Router

from ledger.api.auth import Scope, suite_for_token
from web.api.errors import ErrorOut

from ..status import status_answer
from .schemas import StatusOut

router = Router(tags=["ledger"])


@router.get(
    "/suites/{suite}/status",
    response={200: StatusOut, 401: ErrorOut, 403: ErrorOut},
    summary="Whether the gate passes now, and why not",
    description=(
        "Failing while any open entry is expired, any entry is a tier violation, or the "
        "quarantined share is over the cap; otherwise passing. Each cause is counted and "
        "links to the ledger's rows behind it. The overview's headline and the status badge "
        "say the same. Needs a read (or write) token of the suite."
    ),
)
def status(request, suite: str):
    suite = suite_for_token(request, suite, Scope.READ)
    return status_answer(suite, timezone.now().date(), request.build_absolute_uri)
