"""Who may open each page and take each action (SPEC 6a), and CSRF on every form post.

The table is the access rule, cell by cell: readers (viewer, owner, lead) read every page of
their suite; owners and leads also create, renew and clear; leads alone change settings;
staff lead every suite. An outsider gets 404, a member with too low a role 403, and the
signed-out are sent to sign in. A page ignores a Bearer token: its holder is signed out.

Every cell is one request on the same suite (tests/access.py). A refused request changes
nothing, and neither does any GET; an allowed form post writes its audit event in the
caller's name. Form posts carry a CSRF token, and without it every one is refused.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import get_resolver, reverse
from django.utils import timezone

from flakeboard import rules
from ledger.models import AuditEvent, QuarantineEntry, TrustPolicy
from notify.models import Webhook
from tests.access import SIGNED_IN, Request, ask, ask_every_caller, client_as, parse, rows
from tests.helpers import suite_pages
from trackers.crypto import encrypt
from trackers.models import Tracker

#    action                        out ousd view ownr lead staf read writ othr revk
PAGES = parse("""
GET  home                          302 302 302 302 302 200 302 302 302 302
GET  overview                      302 404 200 200 200 200 302 302 302 302
GET  ledger                        302 404 200 200 200 200 302 302 302 302
GET  ledger_csv                    302 404 200 200 200 200 302 302 302 302
GET  audit_csv                     302 404 403 403 200 200 302 302 302 302
GET  entry                         302 404 200 200 200 200 302 302 302 302
GET  entry_new                     302 404 403 200 200 200 302 302 302 302
POST entry_new                     302 404 403 302 302 302 302 302 302 302
GET  entry_renew                   302 404 403 200 200 200 302 302 302 302
POST entry_renew                   302 404 403 302 302 302 302 302 302 302
GET  entry_clear                   302 404 403 200 200 200 302 302 302 302
POST entry_clear                   302 404 403 302 302 302 302 302 302 302
POST entry_clear_ready             302 404 403 302 302 302 302 302 302 302
POST ledger_bulk                   302 404 403 302 302 302 302 302 302 302
GET  reports                       302 404 200 200 200 200 302 302 302 302
GET  report                        302 404 200 200 200 200 302 302 302 302
GET  verdicts                      302 404 200 200 200 200 302 302 302 302
GET  batch                         302 404 200 200 200 200 302 302 302 302
GET  patch                         302 404 200 200 200 200 302 302 302 302
GET  node                          302 404 200 200 200 200 302 302 302 302
GET  node_by_id                    302 404 301 301 301 301 302 302 302 302
GET  trends                        302 404 200 200 200 200 302 302 302 302
GET  trends_csv                    302 404 200 200 200 200 302 302 302 302
GET  badge                         404 404 200 200 200 200 404 404 404 404
GET  flaky                         302 404 200 200 200 200 302 302 302 302
GET  connect                       302 404 200 200 200 200 302 302 302 302
GET  owners                        302 404 200 200 200 200 302 302 302 302
POST flaky_measure                 302 404 403 302 302 302 302 302 302 302
GET  settings                      302 404 403 403 200 200 302 302 302 302
GET  settings_runs_needed          302 404 403 403 200 200 302 302 302 302
POST settings_policy               302 404 403 403 302 302 302 302 302 302
POST settings_fixture_pin          302 404 403 403 302 302 302 302 302 302
POST settings_badge                302 404 403 403 302 302 302 302 302 302
POST settings_auto_clear           302 404 403 403 302 302 302 302 302 302
POST settings_junit                302 404 403 403 302 302 302 302 302 302
POST settings_new_tests            302 404 403 403 302 302 302 302 302 302
POST settings_measure_budget       302 404 403 403 302 302 302 302 302 302
POST settings_test_set             302 404 403 403 302 302 302 302 302 302
POST settings_codeowners           302 404 403 403 302 302 302 302 302 302
POST settings_tier_rule_add        302 404 403 403 302 302 302 302 302 302
GET  settings_tier_rule_preview    302 404 403 403 200 200 302 302 302 302
POST settings_tier_rule_remove     302 404 403 403 302 302 302 302 302 302
POST settings_member_set           302 404 403 403 302 302 302 302 302 302
POST settings_member_remove        302 404 403 403 302 302 302 302 302 302
POST settings_trust_policy_add     302 404 403 403 302 302 302 302 302 302
POST settings_trust_policy_remove  302 404 403 403 302 302 302 302 302 302
POST settings_token_create         302 404 403 403 302 302 302 302 302 302
POST settings_token_revoke         302 404 403 403 302 302 302 302 302 302
GET  settings_webhook              302 404 403 403 200 200 302 302 302 302
POST settings_webhook_save         302 404 403 403 200 200 302 302 302 302
POST settings_webhook_remove       302 404 403 403 302 302 302 302 302 302
POST settings_webhook_test         302 404 403 403 302 302 302 302 302 302
GET  settings_tracker              302 404 403 403 200 200 302 302 302 302
POST settings_tracker_save         302 404 403 403 302 302 302 302 302 302
POST settings_tracker_remove       302 404 403 403 302 302 302 302 302 302
POST settings_tracker_test         302 404 403 403 302 302 302 302 302 302
GET  admin:index                   302 302 302 302 302 200 302 302 302 302
GET  admin:entry_add               302 302 302 302 302 200 302 302 302 302
POST admin:entry_add               302 302 302 302 302 302 302 302 302 302
POST logout                        302 302 302 302 302 302 302 302 302 302
GET  healthz                       200 200 200 200 200 200 200 200 200 200
GET  metrics                       404 404 404 404 404 404 404 404 404 404
GET  ci_client                     200 200 200 200 200 200 200 200 200 200
""")
POSTS = [(method, action) for method, action in PAGES if method == "POST"]
ENTRY_ACTIONS = ["entry_new", "entry_renew", "entry_clear"]


def page_request(method: str, action: str, w) -> Request:
    """The request of one table row, with valid data: only access can stop it."""
    s = w.suite.slug
    soon = (w.today + timedelta(days=7)).isoformat()
    gets = {
        **suite_pages(w.suite, entry=w.entry, report=w.report, batch=w.batch, node=w.node),
        "home": reverse("home"),
        "node_by_id": reverse("node_by_id", args=[s, w.node]),
        "trends": reverse("trends", args=[s]),
        "trends_csv": reverse("trends_csv", args=[s, "verdicts"]),
        "settings": reverse("settings", args=[s]),
        "ledger_csv": reverse("ledger_csv", args=[s]) + "?state=open&sort=-expires",
        "audit_csv": reverse("audit_csv", args=[s]),
        "badge": reverse("badge", args=[s]),
        "settings_runs_needed": reverse("settings_runs_needed", args=[s])
        + "?max_upper_rate=1&min_runs=300",
        "settings_tier_rule_preview": reverse("settings_tier_rule_preview", args=[s])
        + "?glob=tests/*&tier=0",
        "settings_webhook": reverse("settings_webhook", args=[s]),
        "settings_tracker": reverse("settings_tracker", args=[s]),
        "admin:index": reverse("admin:index"),
        "admin:entry_add": reverse("admin:ledger_quarantineentry_add"),
        "healthz": reverse("healthz"),
        "metrics": reverse("metrics"),  # off: no METRICS_TOKEN (test_metrics.py turns it on)
        "ci_client": reverse("ci_client"),
    }
    if method == "GET":
        return Request(gets[action])
    # The forms that post to a URL of the suite alone, by URL name: their data.
    suite_posts = {
        "ledger_bulk": {"action": "renew", "entry": [w.entry.pk], "expires": soon,
                        "evidence": "ci/run-12", "note": "still flaky"},
        "settings_policy": {"max_upper_rate": "3", "min_runs": "150",
                            "max_quarantined_share": "10", "max_quarantine_days": "20",
                            "note": "tuned"},
        "settings_fixture_pin": {"fixture_manifest": "sha256:" + "0f1e" * 16,
                                 "fixture_seed": "7"},
        "settings_badge": {"public_badge": "on"},
        "settings_auto_clear": {"auto_clear": "on"},
        "settings_junit": {"junit_infrastructure_share": "70"},
        "settings_new_tests": {"new_test_runs": "20", "new_test_share": "25"},
        "settings_measure_budget": {"measure_budget": "120"},
        "settings_test_set": {"default_branch": "trunk"},
        "settings_codeowners": {"codeowners": "tests/ @finley\n"},
        "settings_tier_rule_add": {"glob": "tests/test_golden.py::*", "tier": "1"},
        "settings_member_set": {"username": w.viewer.username, "role": "owner"},
        "settings_trust_policy_add": {"kind": "github", "repository": "acme/payments"},
        "settings_token_create": {"name": "nightly", "scope": "read"},
        "settings_webhook_save": {"url": "https://hooks.example.com/flakeboard",
                                  "format": "json"},
        "settings_webhook_remove": {},
        "settings_webhook_test": {},
        "settings_tracker_save": {"kind": "github", "project": "acme/payments",
                                  "token": "github_pat_x", "labels": "flaky-test",
                                  "on_new_entry": "on"},
        "settings_tracker_remove": {},
        "settings_tracker_test": {},
        "flaky_measure": {"node": w.node, "marked": "1"},
    }
    posts = {
        **{name: Request(reverse(name, args=[s]), data) for name, data in suite_posts.items()},
        "entry_new": Request(gets["entry_new"], {
            "node": "tests/test_new.py::test_flaky", "owner": "@finley", "expires": soon,
            "evidence": "ci/run-9"}),
        "entry_renew": Request(gets["entry_renew"], {
            "expires": soon, "evidence": "ci/run-10", "owner": "", "note": "still flaky"}),
        "entry_clear": Request(gets["entry_clear"], {"note": "fixed"}),
        "entry_clear_ready": Request(reverse("entry_clear_ready", args=[s, w.entry.pk]), {}),
        "settings_tier_rule_remove": Request(
            reverse("settings_tier_rule_remove", args=[s, w.rule.pk]), {}),
        "settings_member_remove": Request(
            reverse("settings_member_remove", args=[s, w.viewer_membership.pk]), {}),
        "settings_trust_policy_remove": Request(reverse(
            "settings_trust_policy_remove", args=[s, trusted_ci(w, action)]), {}),
        "settings_token_revoke": Request(
            reverse("settings_token_revoke", args=[s, w.read_token.pk]), {}),
        "admin:entry_add": Request(gets["admin:entry_add"], {
            "suite": str(w.suite.pk), "nodeid": "tests/test_admin.py::test_flaky",
            "owner": "@finley", "expires": soon, "evidence": "ci/run-11", "note": "",
            "n": "200", "fails": "3", "seed_base": ""}),
        "logout": Request(reverse("logout"), {}),
    }
    if action == "entry_clear_ready":
        # One click clears only a ready entry: the world's is made ready (each cell rolls
        # back to here), so that access is all that can stop the request.
        QuarantineEntry.objects.filter(pk=w.entry.pk).update(
            ready_to_clear=True, trail=[{"report": w.report.pk, "n": 200, "fails": 0,
                                         "clean": True}] * 3)
    if action in ("settings_webhook_remove", "settings_webhook_test"):
        # A webhook to remove or test; on loopback, so the test send is refused unsent.
        Webhook.objects.get_or_create(suite=w.suite, defaults={
            "url": "http://127.0.0.1:9/hook", "secret": "s", "created_at": timezone.now()})
    if action in ("settings_tracker_remove", "settings_tracker_test"):
        # A tracker to remove or test; on loopback, so the test read is refused unsent.
        Tracker.objects.get_or_create(suite=w.suite, defaults={
            "kind": "github", "site": "http://127.0.0.1:9", "project": "acme/payments",
            "token_encrypted": encrypt("github_pat_x"), "created_at": timezone.now()})
    return posts[action]


def trusted_ci(w, action: str) -> int:
    """A trust policy to remove (0, which none has, unless the action removes one)."""
    if action != "settings_trust_policy_remove":
        return 0
    return TrustPolicy.objects.get_or_create(
        suite=w.suite, kind="github", issuer=rules.GITHUB_ISSUER, repository="acme/payments",
        default_ref="refs/heads/main")[0].pk


def sent_to_sign_in(response) -> bool:
    location = response.get("Location", "")
    return response.status_code == 302 and location.startswith(
        (reverse("login"), reverse("admin:login"))
    )


@pytest.mark.parametrize(("method", "action"), rows(PAGES))
def test_every_caller_gets_the_status_in_the_table(world, method, action):
    cells = ask_every_caller(method, page_request(method, action, world), world)
    assert {caller: cell.status for caller, cell in cells.items()} == PAGES[(method, action)]
    for caller, cell in cells.items():
        if caller not in SIGNED_IN and not action.startswith(("admin:", "logout")):
            assert cell.status != 302 or sent_to_sign_in(cell.response), caller
        if method == "GET" or cell.status in (403, 404) or sent_to_sign_in(cell.response):
            assert not cell.changed and not cell.audited, (caller, cell.audited)
        elif action != "logout":
            assert cell.audited == [f"@{world.users[caller].username}"], caller


def test_the_table_covers_every_page():
    """A new page cannot slip past the table."""
    names = {name for name in get_resolver().reverse_dict if isinstance(name, str)}
    pages = {n for n in names if not n.startswith(("admin", "api")) and n != "login"}
    covered = {action for _, action in PAGES}
    assert pages <= covered, sorted(pages - covered)


# --- CSRF -----------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "action"), rows(PAGES, POSTS))
def test_every_form_post_needs_its_csrf_token(world, method, action):
    assert PAGES[(method, action)]["staff"] in (200, 302)
    cell = ask("staff", method, page_request(method, action, world), world, csrf=False)
    assert cell.status == 403
    assert b"CSRF" in cell.response.content
    assert not cell.changed


@pytest.mark.parametrize("action", ENTRY_ACTIONS)
def test_a_form_page_hands_out_the_token_its_post_needs(world, action):
    request = page_request("POST", action, world)
    browser = client_as("owner", world)
    token = browser.get(request.path).cookies["csrftoken"].value
    response = browser.post(request.path, {**request.data, "csrfmiddlewaretoken": token})
    assert response.status_code == 302
    assert AuditEvent.objects.latest("pk").actor == "@finley"


def test_htmx_posts_carry_the_token_in_a_header(world):
    browser = client_as("owner", world)
    token = browser.get(reverse("ledger", args=[world.suite.slug])).cookies["csrftoken"].value
    url = reverse("entry_clear", args=[world.suite.slug, world.entry.pk])
    response = browser.post(url, {"note": "fixed", "place": "row"},
                            headers={"HX-Request": "true", "X-CSRFToken": token})
    assert response.status_code == 200
    assert QuarantineEntry.objects.get(pk=world.entry.pk).cleared_at is not None


def test_sign_in_needs_its_csrf_token(lead):
    client = Client(enforce_csrf_checks=True)
    response = client.post(reverse("login"), {"username": lead.username, "password": "x"})
    assert response.status_code == 403


# --- beyond the table -------------------------------------------------------------------


def test_an_entry_under_another_suites_slug_is_not_found(client_for, world, lead):
    # A lead of acme asking for acme's entry under the other suite's slug.
    url = reverse("entry", args=[world.other_suite.slug, world.entry.pk])
    assert client_for(lead).get(url).status_code == 404


@pytest.mark.parametrize("method", ["put", "delete"])
def test_actions_answer_only_get_and_post(client_for, world, owner, method):
    url = reverse("entry_clear", args=[world.suite.slug, world.entry.pk])
    assert getattr(client_for(owner), method)(url).status_code == 405
