"""The settings page's tier rules (SPEC 6): a live preview, a warning before a rule creates
violations, a confirmation that covers only the entries warned about, and each change
audited. The page's other sections are in test_settings_page.py."""

from __future__ import annotations

from datetime import timedelta

from flakeboard import rules
from ledger.models import AuditEvent, QuarantineEntry, TierRule
from ledger.quarantine import quarantine_create
from ledger.selectors import ledger_for_gate
from tests import test_settings_page
from tests.test_settings_page import FLAKY, OTHER, settings_events, url

quarantined = test_settings_page.quarantined  # the fixture


# --- tier rules ----------------------------------------------------------------------


def test_a_rule_that_would_create_a_violation_is_warned_about_first(
    client_for, suite, lead, quarantined, today
):
    client = client_for(lead)
    glob = "tests/test_contract.py::*"
    assert FLAKY in ledger_for_gate(suite)
    warned = client.post(url("settings_tier_rule_add", suite), {"glob": glob, "tier": "1"})
    assert warned.status_code == 200
    html = warned.content.decode()
    assert "would turn 1 quarantined node into a tier violation" in html
    assert FLAKY in html and "Add the rule anyway" in html
    assert f'name="confirm" value="{quarantined.pk}"' in html
    assert not TierRule.objects.exists() and not settings_events(suite).exists()
    assert FLAKY in ledger_for_gate(suite)

    saved = client.post(url("settings_tier_rule_add", suite),
                        {"glob": glob, "tier": "1", "confirm": str(quarantined.pk)})
    assert saved.status_code == 302
    entry = QuarantineEntry.objects.select_related("node").get(pk=quarantined.pk)
    assert entry.state(today) is rules.EntryState.TIER_VIOLATION
    assert FLAKY not in ledger_for_gate(suite)
    event = settings_events(suite).get()
    assert (event.action, event.after) == (AuditEvent.Action.TIER_RULE, {"glob": glob, "tier": 1})


def test_a_confirmation_covers_only_the_entries_warned_about(
    client_for, suite, lead, quarantined, today
):
    client = client_for(lead)
    quarantine_create(suite=suite, nodeid=OTHER, owner="@finley", evidence="ci/run-2",
                      expires=today + timedelta(days=5), actor="@finley", today=today)
    response = client.post(url("settings_tier_rule_add", suite),
                           {"glob": "tests/test_contract.py::*", "tier": "0",
                            "confirm": str(quarantined.pk)})
    assert response.status_code == 200
    assert "would turn 2 quarantined nodes" in response.content.decode()
    assert not TierRule.objects.exists()


def test_a_harmless_rule_is_added_at_once(client_for, suite, lead, quarantined):
    response = client_for(lead).post(url("settings_tier_rule_add", suite),
                                     {"glob": "tests/test_many.py::test_1*", "tier": "0"})
    assert response.status_code == 302
    assert TierRule.objects.get().glob == "tests/test_many.py::test_1*"
    assert FLAKY in ledger_for_gate(suite)


def test_a_duplicate_glob_is_refused_on_the_form(client_for, suite, lead):
    client = client_for(lead)
    client.post(url("settings_tier_rule_add", suite), {"glob": "tests/a/*", "tier": "0"})
    again = client.post(url("settings_tier_rule_add", suite), {"glob": "tests/a/*", "tier": "1"})
    assert again.status_code == 200
    assert "already exists" in again.content.decode()
    assert TierRule.objects.count() == 1


def test_the_live_preview_lists_matching_nodes_and_violations(client_for, suite, lead,
                                                             quarantined):
    client = client_for(lead)
    preview = client.get(url("settings_tier_rule_preview", suite),
                         {"glob": "tests/test_contract.py::*", "tier": "1"},
                         headers={"HX-Request": "true"})
    html = preview.content.decode()
    assert preview.status_code == 200 and "<html" not in html
    assert 'id="rule-preview"' in html
    assert FLAKY in html and OTHER in html and "would become a tier violation" in html
    harmless = client.get(url("settings_tier_rule_preview", suite),
                          {"glob": "tests/test_contract.py::*", "tier": "2"},
                          headers={"HX-Request": "true"}).content.decode()
    assert "would become" not in harmless and "matches 2 known nodes" in harmless
    empty = client.get(url("settings_tier_rule_preview", suite), {"glob": "", "tier": "0"},
                       headers={"HX-Request": "true"}).content.decode()
    assert "Type a glob" in empty
    page = client.get(url("settings", suite)).content.decode()
    assert 'hx-trigger="input changed delay:400ms"' in page
    assert url("settings_tier_rule_preview", suite) in page


def test_removing_a_rule_audits_and_frees_the_entry(client_for, suite, lead, quarantined,
                                                    today):
    client = client_for(lead)
    client.post(url("settings_tier_rule_add", suite),
                {"glob": FLAKY, "tier": "0", "confirm": str(quarantined.pk)})
    rule = TierRule.objects.get()
    response = client.post(url("settings_tier_rule_remove", suite, rule.pk))
    assert response.status_code == 302 and not TierRule.objects.exists()
    entry = QuarantineEntry.objects.select_related("node").get(pk=quarantined.pk)
    assert entry.state(today) is not rules.EntryState.TIER_VIOLATION
    assert FLAKY in ledger_for_gate(suite)
    assert [e.note for e in settings_events(suite)] == ["added", "removed"]
