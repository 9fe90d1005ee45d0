"""The callers of the access matrices (test_access_pages.py, test_access_api.py) and how
one cell is asked: one request, on the ``world`` fixture's suite, inside a savepoint that is
rolled back after it, so that every cell starts from the same suite."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.apps import apps
from django.conf import settings
from django.db import connection, transaction
from django.http import HttpResponse
from django.test import Client
from django.utils.crypto import get_random_string

from ledger.models import ApiToken, AuditEvent, Membership, QuarantineEntry, Suite

# The columns of both tables: signed out; signed in as an outsider (a member of another
# suite only), viewer, owner, lead or staff; then a Bearer token: read, write, another
# suite's write token, a revoked token.
CALLERS = ["out", "outsider", "viewer", "owner", "lead", "staff",
           "read", "write", "other", "revoked"]
SIGNED_IN = {"outsider", "viewer", "owner", "lead", "staff"}


def parse(table: str) -> dict[tuple[str, str], dict[str, int]]:
    """A table's rows, ``METHOD action status…``, as {(method, action): {caller: status}}."""
    rows = {}
    for line in table.strip().splitlines():
        method, action, *cells = line.split()
        assert len(cells) == len(CALLERS), line
        rows[(method, action)] = dict(zip(CALLERS, map(int, cells), strict=True))
    return rows


def rows(table: dict[tuple[str, str], dict[str, int]], keys=None) -> list:
    """The table's rows (or those of ``keys``) as test parameters, ``METHOD-action`` each.
    The first row of each distinct line of statuses runs in every lane; a row that repeats
    a line already asked carries ``wide``: ``make test`` and CI ask every row, and the fast
    lane one of each kind of answer."""
    seen, params = set(), []
    for method, action in keys or table:
        line = tuple(table[(method, action)].values())
        params.append(pytest.param(method, action, id=f"{method}-{action}",
                                   marks=pytest.mark.wide if line in seen else ()))
        seen.add(line)
    return params


@dataclass(frozen=True)
class Request:
    path: str
    data: dict | None = None  # a form post
    json: bytes | None = None  # an upload
    content_type: str = "application/json"  # the upload's


@dataclass(frozen=True)
class Cell:
    response: HttpResponse
    changed: bool  # whether the request changed anything the board stores
    audited: list[str]  # the actors of the audit events it wrote

    @property
    def status(self) -> int:
        return self.response.status_code


def client_as(caller: str, world) -> Client:
    """A client that enforces CSRF checks, as a browser does, signed in (with the world's
    session of that person) or holding a token."""
    client = Client(enforce_csrf_checks=True)
    if caller in SIGNED_IN:
        client.cookies[settings.SESSION_COOKIE_NAME] = world.sessions[caller]
    elif caller in world.tokens:
        client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {world.tokens[caller]}"
    return client


def send(client: Client, method: str, request: Request, *, csrf: bool = True):
    if method == "GET":
        return client.get(request.path)
    if method == "PUT":
        return client.put(request.path, request.json, content_type=request.content_type)
    if request.json is not None:
        return client.post(request.path, request.json, content_type=request.content_type)
    data = dict(request.data)
    if csrf:
        secret = get_random_string(32)
        client.cookies["csrftoken"] = secret
        data["csrfmiddlewaretoken"] = secret
    return client.post(request.path, data)


def _sql(select: str, table: str, rest: str = "") -> str:
    return f"SELECT {select} FROM {connection.ops.quote_name(table)} {rest}"  # noqa: S608 (names)


def stored() -> tuple:
    """What a request could change: the size of every table of the board, and the rows the
    forms change in place (a suite's settings, entries, memberships, and each token's
    revocation: its last use is recorded by every call that shows it, refused or not). Read
    in SQL, not through the ORM: the tables ask this twice for each caller of each page."""
    tables = [model._meta.db_table for name in ("ledger", "runs", "junit")
              for model in apps.get_app_config(name).get_models()]
    queries = ["SELECT " + ", ".join(f"({_sql('COUNT(*)', table)})" for table in tables)]
    queries += [_sql("*", model._meta.db_table, "ORDER BY id")
                for model in (Suite, QuarantineEntry, Membership)]
    queries.append(_sql("id, revoked_at", ApiToken._meta.db_table, "ORDER BY id"))
    with connection.cursor() as cursor:
        state = []
        for query in queries:
            cursor.execute(query)
            state.append(cursor.fetchall())
    return tuple(state)


def ask(caller: str, method: str, request: Request, world, *, csrf: bool = True) -> Cell:
    with transaction.atomic():
        client = client_as(caller, world)
        last_event = AuditEvent.objects.order_by("pk").values_list("pk", flat=True).last()
        before = stored()
        response = send(client, method, request, csrf=csrf)
        if response.streaming:
            b"".join(response.streaming_content)  # read to the end, which closes the file
        changed = stored() != before
        audited = list(AuditEvent.objects.filter(pk__gt=last_event or 0).order_by("pk")
                       .values_list("actor", flat=True))
        transaction.set_rollback(True)
    return Cell(response, changed, audited)


def ask_every_caller(method: str, request: Request, world) -> dict[str, Cell]:
    """One table row: the request, asked by each caller in turn."""
    return {caller: ask(caller, method, request, world) for caller in CALLERS}
