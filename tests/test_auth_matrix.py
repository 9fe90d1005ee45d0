"""Who may do what: every page action and API endpoint, for every kind of caller.

The tables below are the access rules of SPEC 5 and 6a, cell by cell. Each cell is one
request on a fresh copy of the same suite (a savepoint rolled back after it). Form posts
carry a CSRF token, and a client that enforces CSRF checks sends them; the last tests show
that without the token every form post is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.db import transaction
from django.test import Client
from django.urls import reverse
from django.utils.crypto import get_random_string

from ledger.models import ApiToken, Membership
from ledger.quarantine import quarantine_create
from ledger.tiers import tier_rule_add
from ledger.tokens import token_create, token_revoke
from runs.ingest import report_ingest, signals_ingest
from tests.helpers import body, measurement, record

NODE = "tests/test_flaky.py::test_once"
CALLERS = ["out", "outsider", "viewer", "owner", "lead", "staff",
           "read", "write", "other", "revoked"]
SIGNED_IN = {"outsider", "viewer", "owner", "lead", "staff"}

# Columns: signed out, outsider (a member of another suite only), viewer, owner, lead,
# staff; then Bearer tokens: read, write, another suite's write token, a revoked token.
# A page ignores tokens (it is signed out); the API ignores sessions (no token: 401).
PAGES = """
GET  home                         302 302 302 302 302 200 302 302 302 302
GET  overview                     302 404 200 200 200 200 302 302 302 302
GET  ledger                       302 404 200 200 200 200 302 302 302 302
GET  entry                        302 404 200 200 200 200 302 302 302 302
GET  entry_new                    302 404 403 200 200 200 302 302 302 302
POST entry_new                    302 404 403 302 302 302 302 302 302 302
GET  entry_renew                  302 404 403 200 200 200 302 302 302 302
POST entry_renew                  302 404 403 302 302 302 302 302 302 302
GET  entry_clear                  302 404 403 200 200 200 302 302 302 302
POST entry_clear                  302 404 403 302 302 302 302 302 302 302
GET  reports                      302 404 200 200 200 200 302 302 302 302
GET  report                       302 404 200 200 200 200 302 302 302 302
GET  verdicts                     302 404 200 200 200 200 302 302 302 302
GET  batch                        302 404 200 200 200 200 302 302 302 302
GET  node                         302 404 200 200 200 200 302 302 302 302
GET  trends                       302 404 200 200 200 200 302 302 302 302
GET  trends_csv                   302 404 200 200 200 200 302 302 302 302
GET  settings                     302 404 403 403 200 200 302 302 302 302
GET  settings_runs_needed         302 404 403 403 200 200 302 302 302 302
POST settings_policy              302 404 403 403 302 302 302 302 302 302
POST settings_fixture_pin         302 404 403 403 302 302 302 302 302 302
POST settings_tier_rule_add       302 404 403 403 302 302 302 302 302 302
GET  settings_tier_rule_preview   302 404 403 403 200 200 302 302 302 302
POST settings_tier_rule_remove    302 404 403 403 302 302 302 302 302 302
POST settings_member_set          302 404 403 403 302 302 302 302 302 302
POST settings_member_remove       302 404 403 403 302 302 302 302 302 302
POST settings_token_create        302 404 403 403 200 200 302 302 302 302
POST settings_token_revoke        302 404 403 403 302 302 302 302 302 302
GET  admin:index                  302 302 302 302 302 200 302 302 302 302
GET  admin:entry_add              302 302 302 302 302 200 302 302 302 302
POST admin:entry_add              302 302 302 302 302 302 302 302 302 302
POST logout                       302 302 302 302 302 302 302 302 302 302
"""

API = """
GET  api:ledger                   401 401 401 401 401 401 200 200 403 401
GET  api:token                    401 401 401 401 401 401 200 200 200 401
POST api:reports                  401 401 401 401 401 401 403 201 403 401
POST api:verdicts                 401 401 401 401 401 401 403 201 403 401
GET  api:trends                   401 401 401 401 401 401 200 200 403 401
GET  api:openapi                  200 200 200 200 200 200 200 200 200 200
GET  healthz                      200 200 200 200 200 200 200 200 200 200
GET  ci_client                    200 200 200 200 200 200 200 200 200 200
"""


def parse(table: str) -> dict[tuple[str, str], dict[str, int]]:
    rows = {}
    for line in table.strip().splitlines():
        method, action, *cells = line.split()
        assert len(cells) == len(CALLERS), line
        rows[(method, action)] = dict(zip(CALLERS, map(int, cells), strict=True))
    return rows


EXPECTED = {**parse(PAGES), **parse(API)}


@dataclass(frozen=True)
class Request:
    path: str
    data: dict | None = None
    json: bytes | None = None


def request_for(method: str, action: str, w) -> Request:
    """The request of one table row, with valid data: only access can stop it."""
    s = w.suite.slug
    soon = (w.today + timedelta(days=7)).isoformat()
    gets = {
        "home": reverse("home"),
        "overview": reverse("overview", args=[s]),
        "ledger": reverse("ledger", args=[s]),
        "entry": reverse("entry", args=[s, w.entry.pk]),
        "entry_new": reverse("entry_new", args=[s]),
        "entry_renew": reverse("entry_renew", args=[s, w.entry.pk]),
        "entry_clear": reverse("entry_clear", args=[s, w.entry.pk]),
        "reports": reverse("reports", args=[s]),
        "report": reverse("report", args=[s, w.report.pk]),
        "verdicts": reverse("verdicts", args=[s]),
        "batch": reverse("batch", args=[s, w.batch.pk]),
        "node": reverse("node", args=[s, NODE]),
        "trends": reverse("trends", args=[s]),
        "trends_csv": reverse("trends_csv", args=[s, "verdicts"]),
        "settings": reverse("settings", args=[s]),
        "settings_runs_needed": reverse("settings_runs_needed", args=[s])
        + "?max_upper_rate=0.01&min_runs=300",
        "settings_tier_rule_preview": reverse("settings_tier_rule_preview", args=[s])
        + "?glob=tests/*&tier=0",
        "admin:index": reverse("admin:index"),
        "admin:entry_add": reverse("admin:ledger_quarantineentry_add"),
        "api:ledger": f"/api/v1/suites/{s}/ledger",
        "api:token": "/api/v1/token",
        "api:trends": f"/api/v1/suites/{s}/trends",
        "api:openapi": "/api/v1/openapi.json",
        "healthz": reverse("healthz"),
        "ci_client": reverse("ci_client"),
    }
    if method == "GET":
        return Request(gets[action])
    posts = {
        "entry_new": Request(gets["entry_new"], {
            "node": "tests/test_new.py::test_flaky", "owner": "@finley", "expires": soon,
            "evidence": "ci/run-9"}),
        "entry_renew": Request(gets["entry_renew"], {
            "expires": soon, "evidence": "ci/run-10", "owner": "", "note": "still flaky"}),
        "entry_clear": Request(gets["entry_clear"], {"note": "fixed"}),
        "settings_policy": Request(reverse("settings_policy", args=[s]), {
            "max_upper_rate": "0.03", "min_runs": "150", "max_quarantined_share": "0.1",
            "max_quarantine_days": "20", "note": "tuned"}),
        "settings_fixture_pin": Request(reverse("settings_fixture_pin", args=[s]), {
            "fixture_manifest": "sha256:0f1e", "fixture_seed": "7"}),
        "settings_tier_rule_add": Request(reverse("settings_tier_rule_add", args=[s]), {
            "glob": "tests/test_golden.py::*", "tier": "1"}),
        "settings_tier_rule_remove": Request(
            reverse("settings_tier_rule_remove", args=[s, w.rule.pk]), {}),
        "settings_member_set": Request(reverse("settings_member_set", args=[s]), {
            "username": w.viewer.username, "role": "owner"}),
        "settings_member_remove": Request(
            reverse("settings_member_remove", args=[s, w.viewer_membership.pk]), {}),
        "settings_token_create": Request(reverse("settings_token_create", args=[s]), {
            "name": "nightly", "scope": "read"}),
        "settings_token_revoke": Request(
            reverse("settings_token_revoke", args=[s, w.read_token.pk]), {}),
        "admin:entry_add": Request(gets["admin:entry_add"], {
            "suite": str(w.suite.pk), "nodeid": "tests/test_admin.py::test_flaky",
            "owner": "@finley", "expires": soon, "evidence": "ci/run-11", "note": "",
            "n": "200", "fails": "3", "seed_base": ""}),
        "logout": Request(reverse("logout"), {}),
        "api:reports": Request(f"/api/v1/suites/{s}/reports",
                               json=body([measurement("tests/test_0.py::test_ok")])),
        "api:verdicts": Request(f"/api/v1/suites/{s}/verdicts",
                                json=body([record("tests/test_0.py::test_ok")])),
    }
    return posts[action]


@pytest.fixture
def world(suite, other_suite, lead, owner, viewer, outsider, staff, today):
    rows = [measurement(f"tests/test_{i}.py::test_ok") for i in range(40)]
    rows.append(measurement(NODE, fails=9))
    report = report_ingest(suite=suite, body=body(rows), actor="ci").upload
    batch = signals_ingest(suite=suite, body=body([record(NODE)]), actor="ci").upload
    entry = quarantine_create(suite=suite, nodeid=NODE, owner="@finley",
                              expires=today + timedelta(days=3), evidence="ci/run-1",
                              actor="@finley", today=today)
    rule = tier_rule_add(suite=suite, glob="tests/test_properties.py::*", tier=0,
                         actor="@lea")
    read_raw = token_create(suite=suite, scope="read", actor="@lea")[1]
    write_raw = token_create(suite=suite, scope="write", actor="@lea")[1]
    other_raw = token_create(suite=other_suite, scope="write", actor="@otto")[1]
    revoked_raw = token_create(suite=suite, scope="write", actor="@lea")[1]
    token_revoke(token=ApiToken.objects.get(prefix=revoked_raw[:12]), actor="@lea")
    return SimpleNamespace(
        suite=suite, today=today, report=report, batch=batch, entry=entry, rule=rule,
        viewer=viewer, viewer_membership=Membership.objects.get(user=viewer),
        read_token=ApiToken.objects.get(prefix=read_raw[:12]),
        users={"outsider": outsider, "viewer": viewer, "owner": owner, "lead": lead,
               "staff": staff},
        tokens={"read": read_raw, "write": write_raw, "other": other_raw,
                "revoked": revoked_raw},
    )


def client_as(caller: str, w) -> Client:
    client = Client(enforce_csrf_checks=True)
    if caller in SIGNED_IN:
        client.force_login(w.users[caller])
    elif caller in w.tokens:
        client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {w.tokens[caller]}"
    return client


def send(client: Client, method: str, request: Request, *, csrf: bool = True):
    if method == "GET":
        return client.get(request.path)
    if request.json is not None:
        return client.post(request.path, request.json, content_type="application/json")
    data = dict(request.data)
    if csrf:
        secret = get_random_string(32)
        client.cookies["csrftoken"] = secret
        data["csrfmiddlewaretoken"] = secret
    return client.post(request.path, data)


def answer_in_savepoint(caller: str, method: str, action: str, w, *, csrf: bool = True):
    with transaction.atomic():
        response = send(client_as(caller, w), method, request_for(method, action, w),
                        csrf=csrf)
        transaction.set_rollback(True)
    if response.streaming:
        b"".join(response.streaming_content)  # read to the end, which closes the file
    return response


@pytest.mark.parametrize(("method", "action"), list(EXPECTED), ids=lambda x: x)
def test_every_caller_gets_the_status_in_the_table(world, method, action):
    expected = EXPECTED[(method, action)]
    got = {}
    for caller in CALLERS:
        response = answer_in_savepoint(caller, method, action, world)
        got[caller] = response.status_code
        if response.status_code == 302 and expected[caller] == 302 and (
            caller not in SIGNED_IN and not action.startswith(("admin:", "logout"))
        ):
            assert response["Location"].startswith(reverse("login")), (caller, action)
    assert got == expected


def test_the_tables_cover_every_route(world):
    """A new page or endpoint cannot slip past the tables."""
    from django.urls import get_resolver

    names = {name for name in get_resolver().reverse_dict if isinstance(name, str)}
    board = {n for n in names if not n.startswith(("admin", "api")) and n != "login"}
    covered = {action for _, action in EXPECTED}
    assert board <= covered, sorted(board - covered)
    from flakeboard.api import api

    operations = {
        f"api:{path.rsplit('/', 1)[-1]}"
        for path in api.get_openapi_schema(path_prefix="/api/v1/")["paths"]
    }
    assert operations <= covered, sorted(operations - covered)


def table_sizes() -> dict[str, int]:
    return {model._meta.label: model.objects.count() for model in apps.get_models()}


POSTS = [(m, a) for (m, a) in parse(PAGES) if m == "POST"]


@pytest.mark.parametrize(("method", "action"), POSTS, ids=lambda x: x)
def test_every_form_post_needs_its_csrf_token(world, method, action):
    caller = "staff"
    allowed = EXPECTED[(method, action)][caller]
    assert allowed in (200, 302)
    before = table_sizes()
    response = answer_in_savepoint(caller, method, action, world, csrf=False)
    assert response.status_code == 403
    assert b"CSRF" in response.content
    assert table_sizes() == before


def test_sign_in_needs_its_csrf_token(lead):
    client = Client(enforce_csrf_checks=True)
    response = client.post(reverse("login"), {"username": lead.username, "password": "x"})
    assert response.status_code == 403


def test_htmx_posts_carry_the_token_in_a_header(world):
    client = client_as("owner", world)
    secret = get_random_string(32)
    client.cookies["csrftoken"] = secret
    url = reverse("entry_clear", args=[world.suite.slug, world.entry.pk])
    response = client.post(url, {"note": "fixed", "place": "row"}, HTTP_HX_REQUEST="true",
                           HTTP_X_CSRFTOKEN=secret)
    assert response.status_code == 200
    world.entry.refresh_from_db()
    assert world.entry.cleared_at is not None
