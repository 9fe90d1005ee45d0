"""API tokens: created once and shown once, stored as a prefix plus a SHA-256 digest."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from .audit import record_event
from .models import ApiToken, AuditEvent, Suite

SCOPE_PREFIX = {ApiToken.Scope.READ: "fbr_", ApiToken.Scope.WRITE: "fbw_"}
PREFIX_LENGTH = 12
# What token_create makes: a scope prefix, then URL-safe base64. Anything else (a NUL byte,
# say, which PostgreSQL cannot even compare) is refused before the database is asked.
TOKEN_SHAPE = re.compile(r"fb[rw]_[A-Za-z0-9_-]+")
# last_used_at is written at most this often, so a busy gate does not write on every read.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def _digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def token_create(*, suite: Suite, scope: str, actor: str, name: str = "") -> tuple[ApiToken, str]:
    """Create a token; the plaintext is returned here and never stored or shown again."""
    scope = ApiToken.Scope(scope)
    raw = SCOPE_PREFIX[scope] + secrets.token_urlsafe(32)
    with transaction.atomic():
        token = ApiToken.objects.create(
            suite=suite,
            name=name.strip(),
            scope=scope,
            prefix=raw[:PREFIX_LENGTH],
            digest=_digest(raw),
            created_by=actor,
        )
        record_event(
            suite=suite,
            action=AuditEvent.Action.TOKEN,
            actor=actor,
            after={"token": token.prefix, "scope": scope.value, "name": token.name},
            note="created",
        )
    return token, raw


def token_revoke(*, token: ApiToken, actor: str) -> ApiToken:
    with transaction.atomic():
        token = ApiToken.objects.select_for_update().get(pk=token.pk)
        if token.revoked_at is None:
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
            record_event(
                suite=token.suite,
                action=AuditEvent.Action.TOKEN,
                actor=actor,
                before={"token": token.prefix, "revoked": False},
                after={"token": token.prefix, "revoked": True},
                note="revoked",
            )
    return token


def token_authenticate(raw: str) -> ApiToken | None:
    """The active token whose digest matches ``raw``, compared in constant time; else None."""
    if not isinstance(raw, str) or not TOKEN_SHAPE.fullmatch(raw):
        return None
    if len(raw) > 200 or len(raw) <= PREFIX_LENGTH:
        return None
    token = (
        ApiToken.objects.select_related("suite")
        .filter(prefix=raw[:PREFIX_LENGTH], revoked_at__isnull=True)
        .first()
    )
    if token is None or not hmac.compare_digest(token.digest, _digest(raw)):
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token
