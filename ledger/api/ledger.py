"""The gate endpoint: the served ledger as flake_ledger.json, with ETag and 304."""

from __future__ import annotations

from typing import Literal

from django.http import HttpResponseNotModified, JsonResponse
from django.utils import timezone
from django.utils.http import parse_etags
from ninja import Router

from web.api.auth import Scope, suite_for_token
from web.api.errors import ErrorOut

from ..gate_ledger import ledger_etag, ledger_full
from ..selectors import ledger_for_gate
from .schemas import LedgerFull, LedgerMap, SuiteRef, TokenOut

router = Router(tags=["ledger"])

# A cache may keep the ledger but must ask the board before each use.
CACHE_CONTROL = "private, no-cache"
ETAG_HEADER = {
    "ETag": {
        "description": "A strong tag of this ledger: send it back as If-None-Match.",
        "schema": {"type": "string"},
    }
}


def _client_has(request, etag: str) -> bool:
    tags = parse_etags(request.headers.get("If-None-Match", ""))
    return "*" in tags or etag in tags or f"W/{etag}" in tags


@router.get(
    "/suites/{suite}/ledger",
    response={200: LedgerMap | LedgerFull, 304: None, 401: ErrorOut, 403: ErrorOut,
              422: ErrorOut},
    by_alias=True,
    openapi_extra={"responses": {200: {"headers": ETAG_HEADER}, 304: {"headers": ETAG_HEADER}}},
    summary="The quarantine ledger, as flake_ledger.json",
    description=(
        "Every entry that is not cleared, expired ones included, and no tier violation: "
        "save it as `flake_ledger.json` and the budget script reads it unchanged. "
        "`?view=full` answers an envelope with each entry's state, renewals and age, the "
        "violations, the policy, the ledger revision and the policy hash. Send the `ETag` "
        "back as `If-None-Match` to get 304 while the ledger is unchanged. Needs a read "
        "(or write) token of the suite."
    ),
)
def ledger(request, suite: str, view: Literal["compact", "full"] = "compact"):
    suite = suite_for_token(request, suite, Scope.READ)
    now = timezone.now()
    full = view == "full"
    etag = ledger_etag(suite, full=full, today=now.date())
    if _client_has(request, etag):
        response = HttpResponseNotModified()
    else:
        body = ledger_full(suite, today=now.date(), now=now) if full else ledger_for_gate(suite)
        response = JsonResponse(body, json_dumps_params={"ensure_ascii": False})
    response["ETag"] = etag
    response["Cache-Control"] = CACHE_CONTROL
    return response


@router.get(
    "/token",
    response={200: TokenOut, 401: ErrorOut},
    summary="The token's own suite and scope",
    description="Which suite the token belongs to, and whether it reads or also writes.",
)
def token(request):
    token = request.auth
    return {
        "suite": SuiteRef(slug=token.suite.slug, name=token.suite.title),
        "scope": token.scope,
        "name": token.name,
        "prefix": token.prefix,
        "created_at": token.created_at,
        "last_used_at": token.last_used_at,
    }
