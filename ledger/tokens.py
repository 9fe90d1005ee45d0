"""API tokens: created once and shown once, stored as a prefix plus a SHA-256 digest."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import UTC, date, datetime, time, timedelta

from django.core.exceptions import ValidationError
from django.db import connections, router, transaction
from django.db.models import Q
from django.utils import timezone

from . import changes
from .audit import record_event
from .models import ApiToken, AuditEvent, Suite

SCOPE_PREFIX = {ApiToken.Scope.READ: "fbr_", ApiToken.Scope.WRITE: "fbw_"}
PREFIX_LENGTH = 12
# What token_create makes: a scope prefix, then URL-safe base64. Anything else (a NUL byte,
# say, which PostgreSQL cannot even compare) is refused before the database is asked.
TOKEN_SHAPE = re.compile(r"fb[rw]_[A-Za-z0-9_-]+")
# last_used_at is written at most this often, so a busy gate does not write on every read.
LAST_USED_RESOLUTION = timedelta(minutes=1)
# How many tokens' models each process keeps for reuse (``_TokenQuery``).
KNOWN_TOKENS = 256
# The settings page and the leads' digest warn of a token that expires within this long.
EXPIRY_WARNING = timedelta(days=14)


class TokenExpired(Exception):
    """The token is genuine (its digest matched) but its expiry has passed."""

    def __init__(self, token: ApiToken):
        super().__init__(f"{token.label} expired at {token.expires_at:%Y-%m-%d %H:%M} UTC")
        self.token = token


def _digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def token_expiry(day: date) -> datetime:
    """A token that works through ``day`` (UTC) expires at the midnight after it."""
    return datetime.combine(day + timedelta(days=1), time.min, tzinfo=UTC)


def token_create(
    *, suite: Suite, scope: str, actor: str, name: str = "", expires_at: datetime | None = None,
    default_branch_only: bool = False,
) -> tuple[ApiToken, str]:
    """Create a token; the plaintext is returned here and never stored or shown again.

    ``expires_at`` (aware), when given, must be in the future; None never expires.
    ``default_branch_only`` makes a write token whose uploads are the default branch's
    (``rules.credential_branch``); while the suite keeps one, only such uploads size its
    test set (``rules.trust``)."""
    scope = ApiToken.Scope(scope)
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationError("A token's expiry must be in the future.", code="expiry_past")
    if default_branch_only and scope is not ApiToken.Scope.WRITE:
        raise ValidationError(
            "Only a write token can be kept for the default branch: a read token uploads "
            "nothing.", code="default_branch_read")
    raw = SCOPE_PREFIX[scope] + secrets.token_urlsafe(32)
    with transaction.atomic():
        token = ApiToken.objects.create(
            suite=suite,
            name=name.strip(),
            scope=scope,
            prefix=raw[:PREFIX_LENGTH],
            digest=_digest(raw),
            created_by=actor,
            expires_at=expires_at,
            default_branch_only=default_branch_only,
        )
        after = {"token": token.prefix, "scope": scope.value, "name": token.name}
        if expires_at is not None:
            after["expires_at"] = expires_at.isoformat()
        if default_branch_only:
            after["default_branch_only"] = True
        record_event(
            suite=suite,
            action=AuditEvent.Action.TOKEN,
            actor=actor,
            after=after,
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


def tokens_expiring(suites, now: datetime):
    """The active tokens of ``suites`` that expire within EXPIRY_WARNING of ``now`` (not yet
    expired), soonest first."""
    return ApiToken.objects.filter(
        suite__in=suites, revoked_at__isnull=True,
        expires_at__gt=now, expires_at__lte=now + EXPIRY_WARNING,
    ).select_related("suite").order_by("expires_at", "pk")


class _TokenQuery:
    """An active token with its suite, found by prefix (unique, so indexed): the ORM's own
    SQL, composed once per database, since composing it through the ORM took several times
    longer than running it.

    Two queries are compiled, each with a stand-in prefix. ``check`` reads the token's id, its
    expiry and its suite's whole row, raw; ``build`` reads both rows whole, and
    they are made into models with the ORM's converters. Making models costs more than the
    check, so the models are kept (``KNOWN_TOKENS`` tokens, in this process) with the row
    the check read, and given out again while it reads the same row. The check itself is
    skipped while no row of a token or a suite has changed since it ran (``ledger.changes``:
    exact on SQLite; on PostgreSQL, until the notification of a change arrives, within
    milliseconds of its commit). So a revoked token, a new ledger revision and a changed
    setting are all seen on the next call, in every process; a call that finds a changed
    row (or a token first seen here) builds the models again. The models given out are
    shared: callers only read them (``suite_for_token`` hands views a copy of the suite).
    """

    STAND_IN = "fbr_stand-in"

    def __init__(self, alias: str):
        tokens = ApiToken.objects.using(alias).filter(
            prefix=self.STAND_IN, revoked_at__isnull=True
        ).order_by()
        suite_fields = [f"suite__{field.attname}" for field in Suite._meta.concrete_fields]
        self.check_sql = self._sql(
            tokens.values_list("pk", "expires_at", *suite_fields)[:1].query, alias
        )
        compiler = tokens.select_related("suite")[:1].query.get_compiler(using=alias)
        self.build_sql = self._sql(compiler.query, alias, compiler)
        columns = [column for column, _, _ in compiler.select]
        # The converters read only the database's settings (its time zone), which every
        # thread's connection to this alias shares.
        self.converters = list(compiler.get_converters(columns).items())
        suite_info = compiler.klass_info["related_klass_infos"][0]
        self.token_fields = self._layout(columns, compiler.klass_info["select_fields"])
        self.suite_fields = self._layout(columns, suite_info["select_fields"])
        # prefix -> (the checked row, its models, the change marker taken before the check)
        self.known: dict[str, tuple[tuple, ApiToken, object]] = {}

    @classmethod
    def _sql(cls, query, alias: str, compiler=None) -> str:
        """The query's SQL with its one parameter named: ``%(prefix)s``. (Django's SQLite
        backend rewrites positional ``%s`` with a regular expression over the whole
        statement on every call, which took a third of this lookup's time.)"""
        sql, params = (compiler or query.get_compiler(using=alias)).as_sql()
        if list(params) != [cls.STAND_IN] or sql.count("%s") != 1:
            raise RuntimeError(f"the token query takes unexpected parameters: {params!r}")
        return sql.replace("%s", "%(prefix)s")

    @staticmethod
    def _layout(columns, positions) -> tuple[slice, list[str]]:
        start, end = positions[0], positions[-1] + 1
        return slice(start, end), [column.target.attname for column in columns[start:end]]

    def fetch(self, alias: str, prefix: str) -> ApiToken | None:
        connection = connections[alias]
        seen = changes.marker(connection)  # before the check, so a change during it counts
        known = self.known.get(prefix)
        if seen is not None and known is not None and known[2] == seen:
            return known[1]  # no row of a token or a suite has changed since
        with connection.cursor() as cursor:
            cursor.execute(self.check_sql, {"prefix": prefix})
            checked = cursor.fetchone()
            if checked is not None and known is not None and known[0] == checked:
                self.known[prefix] = (checked, known[1], seen)
                return known[1]
            self.known.pop(prefix, None)
            if checked is None:
                return None
            cursor.execute(self.build_sql, {"prefix": prefix})
            row = cursor.fetchone()
        if row is None:  # revoked between the two reads
            return None
        token = self._models(connection, alias, list(row))
        if len(self.known) >= KNOWN_TOKENS:
            self.known.pop(next(iter(self.known)))  # the longest known
        self.known[prefix] = (checked, token, seen)
        return token

    def _models(self, connection, alias: str, row: list) -> ApiToken:
        for position, (converters, column) in self.converters:
            for convert in converters:
                row[position] = convert(row[position], column, connection)
        token = ApiToken.from_db(alias, self.token_fields[1], row[self.token_fields[0]])
        token.suite = Suite.from_db(alias, self.suite_fields[1], row[self.suite_fields[0]])
        return token


_token_queries: dict[tuple[str, str], _TokenQuery] = {}


def _active_token(prefix: str) -> ApiToken | None:
    # Always the primary's rows, with a read replica too: the change marker counts the
    # primary's notifications, and a row read from a replica that has not yet replayed the
    # change (a revoked token) would be kept as current until the next one.
    alias = router.db_for_write(ApiToken) or "default"
    key = (alias, connections[alias].vendor)
    if (query := _token_queries.get(key)) is None:
        query = _token_queries[key] = _TokenQuery(alias)
    return query.fetch(alias, prefix)


def token_authenticate(raw: str) -> ApiToken | None:
    """The active token whose digest matches ``raw``, compared in constant time; else None.
    A genuine token past its expiry raises TokenExpired (so the caller can say so).

    One indexed query (the token with its suite, so the caller has the suite's ledger
    revision too; a token first seen by this process, or whose row changed, takes a second),
    none while no token or suite changed since (``_TokenQuery``), and a write of
    ``last_used_at`` at most once a LAST_USED_RESOLUTION. A revoked token is refused on its
    next request, in every worker.
    """
    if not isinstance(raw, str) or not TOKEN_SHAPE.fullmatch(raw):
        return None
    if len(raw) > 200 or len(raw) <= PREFIX_LENGTH:
        return None
    token = _active_token(raw[:PREFIX_LENGTH])
    if token is None or not hmac.compare_digest(token.digest, _digest(raw)):
        return None
    now = timezone.now()
    if token.is_expired(now):
        raise TokenExpired(token)
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        # Written only where no process has written it within the resolution, so that each
        # process's own copy of the token (``_TokenQuery``) need not read it back.
        ApiToken.objects.filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION),
            pk=token.pk,
        ).update(last_used_at=now)
        token.last_used_at = now
    return token
