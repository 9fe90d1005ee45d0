"""The gate endpoint: the served ledger as flake_ledger.json, with ETag and 304."""

from __future__ import annotations

import json
import logging
from datetime import date, datetime
from typing import Literal

from django.core.cache import cache
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpResponse, HttpResponseNotModified
from django.utils import timezone
from django.utils.http import parse_etags
from ninja import Router

from ledger.api.auth import Scope, suite_for_token
from web.api.errors import ErrorOut

from ..gate_ledger import ledger_cache_key, ledger_etag, ledger_full
from ..models import Suite
from ..selectors import ledger_for_gate
from .schemas import LedgerFull, LedgerMap, SuiteRef, TokenOut

logger = logging.getLogger(__name__)
router = Router(tags=["ledger"])

# A cache may keep the ledger but must ask the board before each use.
CACHE_CONTROL = "private, no-cache"
# How long bytes nobody asks for stay cached. A change never waits for this: it bumps the
# ledger revision, which is part of the cache key.
CACHE_SECONDS = 600
ETAG_HEADER = {
    "ETag": {
        "description": "A strong tag of this ledger: send it back as If-None-Match.",
        "schema": {"type": "string"},
    }
}


def _client_has(request, etag: str) -> bool:
    sent = request.META.get("HTTP_IF_NONE_MATCH", "")
    if sent == etag:  # what CI sends back
        return True
    tags = parse_etags(sent)
    return "*" in tags or etag in tags or f"W/{etag}" in tags


def _cache_call(method: str, *args):
    """The shared cache is a help, not a dependency: when it fails, the ledger is built."""
    try:
        return getattr(cache, method)(*args)
    except Exception:
        logger.warning("the ledger cache failed on %s", method, exc_info=True)
        return None


def served_ledger(suite: Suite, *, full: bool, today: date, now: datetime) -> tuple[str, bytes]:
    """The served ledger's ETag and its bytes (UTF-8 JSON), built once per cache key."""
    etag = ledger_etag(suite, full=full, today=today)
    key = ledger_cache_key(suite, full=full, today=today)
    cached = _cache_call("get", key)
    if cached is not None and cached[0] == etag:
        return cached
    body = ledger_full(suite, today=today, now=now) if full else ledger_for_gate(suite)
    served = etag, json.dumps(body, cls=DjangoJSONEncoder, ensure_ascii=False).encode()
    _cache_call("set", key, served, CACHE_SECONDS)
    return served


def ledger_answer(request, suite: Suite, *, full: bool) -> HttpResponse:
    """A ledger GET by a token that may read ``suite``: 304 when the client's copy is
    current (nothing is built or read for it), else the served bytes.

    The API view and the fast path (``ledger.api.fastpath``) both answer with this.
    """
    now = timezone.now()
    etag = ledger_etag(suite, full=full, today=now.date())
    if _client_has(request, etag):
        response = HttpResponseNotModified()
    else:
        etag, body = served_ledger(suite, full=full, today=now.date(), now=now)
        response = HttpResponse(body, content_type="application/json")
    response["ETag"] = etag
    response["Cache-Control"] = CACHE_CONTROL
    return response


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
    return ledger_answer(request, suite, full=view == "full")


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
