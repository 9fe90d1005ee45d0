"""The admin is no back door: staff change nodes, tier rules, members and uploads only
through the audited services, or not at all (SPEC 2.5, 4, 6a)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from ledger.models import AuditEvent, Membership, Node, QuarantineEntry, Role, Suite, TierRule
from ledger.quarantine import quarantine_create
from ledger.selectors import ledger_for_gate
from ledger.tiers import tier_rule_add
from runs.ingest import report_ingest, signals_ingest
from runs.models import Measurement, NodeVerdict, ReasonRollup, Report, VerdictBatch
from tests.helpers import body, measurement, record
from tests.world import module_world

LOCK = "tests/test_auth.py::test_lock_5"
SPARE = "tests/test_auth.py::test_spare"


def add_quarantined(suite, today):
    rows = [measurement(f"tests/test_many.py::test_{i}") for i in range(38)]
    rows += [measurement(LOCK, fails=6), measurement(SPARE)]
    report_ingest(suite=suite, body=body(rows), actor="ci")
    quarantine_create(suite=suite, nodeid=LOCK, owner="@finley", evidence="ci/run-1",
                      expires=today + timedelta(days=10), actor="@finley", today=today)
    return suite


# quarantined: the suite with forty known tier-2 nodes, one of them (LOCK) in the served ledger.
build_world, quarantined = module_world("quarantined", add_quarantined)


def admin_url(model, action, *args):
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{action}", args=args)


def snapshot(suite):
    suite.refresh_from_db()
    return suite.ledger_revision, ledger_for_gate(suite), AuditEvent.objects.count()


# --- nodes ----------------------------------------------------------------------------


def test_a_node_cannot_be_moved_or_retiered(client_for, staff, quarantined, other_suite):
    node = Node.objects.get(suite=quarantined, nodeid=LOCK)
    before = snapshot(quarantined)
    response = client_for(staff).post(admin_url(Node, "change", node.pk), {
        "suite": str(other_suite.pk), "nodeid": "tests/test_moved.py::test_x", "stated_tier": "0",
    })
    assert response.status_code == 403
    node.refresh_from_db()
    assert (node.suite_id, node.nodeid, node.stated_tier, node.tier) == (
        quarantined.pk, LOCK, None, 2)
    assert snapshot(quarantined) == before


def test_a_node_cannot_be_added(client_for, staff, suite, today):
    response = client_for(staff).post(admin_url(Node, "add"), {
        "suite": str(suite.pk), "nodeid": LOCK, "stated_tier": "",
        "first_seen": today.isoformat(), "last_seen": today.isoformat(),
    })
    assert response.status_code == 403
    assert not Node.objects.exists()


# --- tier rules -----------------------------------------------------------------------


def test_a_tier_rule_cannot_be_added_past_the_service(client_for, staff, quarantined):
    before = snapshot(quarantined)
    response = client_for(staff).post(admin_url(TierRule, "add"), {
        "suite": str(quarantined.pk), "glob": LOCK, "tier": "0", "created_by": "",
    })
    assert response.status_code == 403
    assert not TierRule.objects.exists()
    assert Node.objects.get(suite=quarantined, nodeid=LOCK).tier == 2
    assert snapshot(quarantined) == before


@pytest.fixture
def rule(quarantined):
    return tier_rule_add(suite=quarantined, glob="tests/test_auth.py::*", tier=0, actor="@lea")


def test_a_tier_rule_cannot_be_deleted_past_the_service(client_for, staff, quarantined, rule):
    before = snapshot(quarantined)
    client = client_for(staff)
    assert client.post(admin_url(TierRule, "delete", rule.pk), {"post": "yes"}).status_code == 403
    client.post(admin_url(TierRule, "changelist"),
                {"action": "delete_selected", "_selected_action": [rule.pk], "post": "yes"})
    assert TierRule.objects.filter(pk=rule.pk).exists()
    assert Node.objects.get(suite=quarantined, nodeid=LOCK).tier == 0
    assert snapshot(quarantined) == before


# --- uploads --------------------------------------------------------------------------


@pytest.fixture
def uploads(quarantined):
    signals_ingest(suite=quarantined, body=body([record(SPARE)]), actor="ci")
    return quarantined


@pytest.mark.parametrize(
    ("model", "which"),
    [
        (Report, {}), (Measurement, {}), (VerdictBatch, {}), (NodeVerdict, {}),
        (ReasonRollup, {}), (Node, {"nodeid": SPARE}), (Suite, {}),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_uploads_cannot_be_deleted(client_for, staff, uploads, model, which):
    obj = model.objects.filter(**which).first()
    counts = [m.objects.count() for m in (Report, Measurement, VerdictBatch, NodeVerdict,
                                          ReasonRollup, Node, Suite, AuditEvent)]
    client = client_for(staff)
    response = client.post(admin_url(model, "delete", obj.pk), {"post": "yes"})
    assert response.status_code == 403
    client.post(admin_url(model, "changelist"),
                {"action": "delete_selected", "_selected_action": [obj.pk], "post": "yes"})
    assert model.objects.filter(pk=obj.pk).exists()
    assert counts == [m.objects.count() for m in (Report, Measurement, VerdictBatch, NodeVerdict,
                                                  ReasonRollup, Node, Suite, AuditEvent)]


def test_entries_and_events_stay_read_only(client_for, staff, quarantined):
    entry = QuarantineEntry.objects.get()
    event = AuditEvent.objects.first()
    client = client_for(staff)
    assert client.post(admin_url(QuarantineEntry, "delete", entry.pk),
                       {"post": "yes"}).status_code == 403
    assert client.post(admin_url(AuditEvent, "delete", event.pk),
                       {"post": "yes"}).status_code == 403
    assert client.post(admin_url(AuditEvent, "change", event.pk),
                       {"note": "edited"}).status_code == 403
    assert QuarantineEntry.objects.filter(pk=entry.pk, cleared_at=None).exists()
    event.refresh_from_db()
    assert event.note != "edited"


# --- members --------------------------------------------------------------------------


def suite_form(suite, rows, extra=()):
    """The suite's change form as the admin posts it: ``rows`` maps each membership to
    its posted role (None: ticked for deletion); ``extra`` are (user, role) to add."""
    data = {"slug": suite.slug, "name": suite.name}
    forms = [(m.pk, m.user_id, role) for m, role in rows] + [(None, u.pk, r) for u, r in extra]
    prefix = "memberships"
    data.update({f"{prefix}-TOTAL_FORMS": str(len(forms)),
                 f"{prefix}-INITIAL_FORMS": str(len(rows)),
                 f"{prefix}-MIN_NUM_FORMS": "0", f"{prefix}-MAX_NUM_FORMS": "1000"})
    for i, (pk, user, role) in enumerate(forms):
        data.update({f"{prefix}-{i}-id": str(pk or ""), f"{prefix}-{i}-suite": str(suite.pk),
                     f"{prefix}-{i}-user": str(user), f"{prefix}-{i}-role": role or "viewer"})
        if pk and role is None:
            data[f"{prefix}-{i}-DELETE"] = "on"
    return data


def members(suite):
    return dict(Membership.objects.filter(suite=suite).values_list("user__username", "role"))


def member_events(suite):
    return AuditEvent.objects.filter(suite=suite, action=AuditEvent.Action.MEMBER)


@pytest.mark.parametrize("new_role", [None, Role.VIEWER], ids=["removed", "demoted"])
def test_the_last_lead_stays(client_for, staff, suite, lead, owner, new_role):
    mine, theirs = Membership.objects.get(user=lead), Membership.objects.get(user=owner)
    data = suite_form(suite, [(mine, new_role), (theirs, Role.OWNER)])
    response = client_for(staff).post(admin_url(Suite, "change", suite.pk), data)
    assert response.status_code == 200
    assert "needs at least one lead" in response.content.decode()
    assert members(suite) == {"lea": "lead", "finley": "owner"}
    assert not member_events(suite).exists()


def test_member_changes_go_through_the_audited_service(client_for, staff, suite, lead, owner):
    newcomer = get_user_model().objects.create_user(username="nia")
    mine, theirs = Membership.objects.get(user=lead), Membership.objects.get(user=owner)
    # The only lead steps down in the same save that makes the newcomer a lead.
    data = suite_form(suite, [(mine, Role.OWNER), (theirs, None)], extra=[(newcomer, Role.LEAD)])
    response = client_for(staff).post(admin_url(Suite, "change", suite.pk), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert members(suite) == {"lea": "owner", "nia": "lead"}
    events = member_events(suite)
    assert {e.actor for e in events} == {"@stella"}
    changes = {(e.before.get("user") or e.after["user"], e.before.get("role"),
                e.after.get("role"), e.note) for e in events}
    assert changes == {("nia", None, "lead", ""), ("finley", "owner", None, "removed"),
                       ("lea", "lead", "owner", "")}


def test_a_membership_cannot_be_handed_to_another_user(client_for, staff, suite, lead, owner):
    mine, theirs = Membership.objects.get(user=lead), Membership.objects.get(user=owner)
    data = suite_form(suite, [(mine, Role.LEAD), (theirs, Role.OWNER)])
    data["memberships-1-user"] = str(staff.pk)  # a disabled field: the posted value is ignored
    client_for(staff).post(admin_url(Suite, "change", suite.pk), data)
    assert members(suite) == {"lea": "lead", "finley": "owner"}
    assert not member_events(suite).exists()


def test_a_new_suite_gets_its_lead_through_the_service(client_for, staff, lead):
    data = {"slug": "fresh", "name": "Fresh", "max_upper_rate": "0.02", "min_runs": "200",
            "max_quarantined_share": "0.05", "max_quarantine_days": "30",
            "fixture_manifest": "", "fixture_seed": "",
            "memberships-TOTAL_FORMS": "1", "memberships-INITIAL_FORMS": "0",
            "memberships-MIN_NUM_FORMS": "0", "memberships-MAX_NUM_FORMS": "1000",
            "memberships-0-id": "", "memberships-0-user": str(lead.pk),
            "memberships-0-role": "lead"}
    response = client_for(staff).post(admin_url(Suite, "add"), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    fresh = Suite.objects.get(slug="fresh")
    assert members(fresh) == {"lea": "lead"}
    assert member_events(fresh).get().after == {"user": "lea", "role": "lead"}


def test_the_admin_pages_show_where_changes_are_made(client_for, staff, quarantined, rule,
                                                    lead):
    client = client_for(staff)
    settings_url = reverse("settings", args=[quarantined.slug])
    page = client.get(admin_url(Suite, "change", quarantined.pk))
    assert page.status_code == 200
    assert settings_url in page.content.decode()
    page = client.get(admin_url(TierRule, "changelist"))
    assert page.status_code == 200
    assert f"{settings_url}#tier-rules" in page.content.decode()
    node = Node.objects.get(suite=quarantined, nodeid=LOCK)
    assert client.get(admin_url(Node, "change", node.pk)).status_code == 200
