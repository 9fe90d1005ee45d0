"""The settings page (SPEC 6): policy numbers with bounds and the runs-needed helper; tier
rules with a live preview and a warning before one creates violations; the fixture pin;
members; API tokens shown once. Every change writes an audit event. That only leads may
open it or post to it is in the access matrix (test_access_pages.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from flakeboard import rules
from ledger.models import AuditEvent, Suite
from ledger.quarantine import quarantine_create
from ledger.settings_services import (
    fixture_pin_set,
    measure_budget_set,
    member_change,
    new_tests_set,
    policy_update,
)
from runs.ingest import report_ingest
from tests.helpers import body, measurement

FLAKY = "tests/test_contract.py::test_schema_roundtrip"
OTHER = "tests/test_contract.py::test_headers"
# As the form takes them: the budget and the cap in percent (2 is 2%, stored as 0.02).
POLICY = {"max_upper_rate": "2", "min_runs": "200", "max_quarantined_share": "5",
          "max_quarantine_days": "30"}


def url(name, suite, *args):
    return reverse(name, args=[suite.slug, *args])


@pytest.fixture
def quarantined(suite, today):
    """A suite with forty known nodes and one tier-2 node in quarantine."""
    rows = [measurement(f"tests/test_many.py::test_{i}") for i in range(38)]
    rows += [measurement(FLAKY, fails=6), measurement(OTHER)]
    report_ingest(suite=suite, body=body(rows), actor="ci")
    return quarantine_create(suite=suite, nodeid=FLAKY, owner="@finley", evidence="ci/run-1",
                             expires=today + timedelta(days=10), actor="@finley", today=today)


def settings_events(suite):
    return AuditEvent.objects.filter(suite=suite).exclude(
        action__in=[AuditEvent.Action.CREATE, AuditEvent.Action.IMPORT]
    )


# --- policy ------------------------------------------------------------------------


def test_runs_needed_is_shown_for_the_budget(client_for, suite, lead):
    html = client_for(lead).get(url("settings", suite)).content.decode()
    assert rules.runs_needed(0.02) == 189
    assert '<span class="figure">189</span> consecutive clean runs' in html
    policy_update(suite=suite, actor="@lea", max_upper_rate=0.05, min_runs=50,
                  max_quarantined_share=0.05, max_quarantine_days=30)
    html = client_for(lead).get(url("settings", suite)).content.decode()
    assert f'<span class="figure">{rules.runs_needed(0.05)}</span>' in html
    assert "the bound is what decides" in html


def test_runs_needed_follows_the_numbers_being_typed(client_for, suite, lead):
    client = client_for(lead)
    live = url("settings_runs_needed", suite)
    html = client.get(live, {"max_upper_rate": "5", "min_runs": "50"},
                      headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in html and 'id="runs-needed"' in html
    assert f'<span class="figure">{rules.runs_needed(0.05)}</span>' in html
    assert "the budget of 5%" in html and "at least 50 runs" in html
    refused = client.get(live, {"max_upper_rate": "0", "min_runs": "50"}).content.decode()
    assert "within their bounds" in refused and "figure" not in refused
    assert client_for(lead).get(url("settings", suite)).content.decode().count(live) == 1
    assert Suite.objects.get(pk=suite.pk).max_upper_rate == 0.02


def test_saving_the_policy_audits_and_bumps_the_ledger_revision(client_for, suite, lead):
    revision = suite.ledger_revision
    data = {**POLICY, "max_upper_rate": "3", "min_runs": "150", "note": "budget review"}
    response = client_for(lead).post(url("settings_policy", suite), data)
    assert response.status_code == 302 and response["Location"].endswith("#policy")
    suite.refresh_from_db()
    assert (suite.max_upper_rate, suite.min_runs) == (0.03, 150)
    assert suite.ledger_revision == revision + 1
    event = AuditEvent.objects.get(suite=suite, action=AuditEvent.Action.SETTINGS)
    assert (event.actor, event.note) == ("@lea", "budget review")
    assert event.before == {"max_upper_rate": 0.02, "min_runs": 200}
    assert event.after == {"max_upper_rate": 0.03, "min_runs": 150}


def test_saving_unchanged_numbers_records_nothing(client_for, suite, lead):
    client_for(lead).post(url("settings_policy", suite), POLICY)
    assert not settings_events(suite).exists()


# The policy's bounds are the Suite fields' own validators; the service checks each number
# against them, and the form's number fields take the same bounds.
OUT_OF_BOUNDS = [
    ("max_upper_rate", 0.0),
    ("max_upper_rate", 1.5),
    ("min_runs", 0),
    ("max_quarantined_share", -0.1),
    ("max_quarantined_share", 1.01),
    ("max_quarantine_days", 0),
    ("max_quarantine_days", 366),
]


@pytest.mark.parametrize(("field", "value"), OUT_OF_BOUNDS)
def test_the_service_refuses_a_number_out_of_bounds(suite, field, value):
    numbers = {"max_upper_rate": 0.02, "min_runs": 200, "max_quarantined_share": 0.05,
               "max_quarantine_days": 30, field: value}
    with pytest.raises(ValidationError) as refused:
        policy_update(suite=suite, actor="@lea", **numbers)
    assert set(refused.value.message_dict) == {field}
    assert getattr(Suite.objects.get(pk=suite.pk), field) == getattr(suite, field)
    assert not settings_events(suite).exists()


def test_the_service_names_every_number_out_of_bounds(suite):
    with pytest.raises(ValidationError) as refused:
        policy_update(suite=suite, actor="@lea", max_upper_rate=2.0, min_runs=0,
                      max_quarantined_share=0.05, max_quarantine_days=30)
    assert set(refused.value.message_dict) == {"max_upper_rate", "min_runs"}
    assert Suite.objects.get(pk=suite.pk).max_upper_rate == 0.02


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_upper_rate", "150"),
        ("max_upper_rate", "nan"),
        ("max_upper_rate", "lots"),
        ("min_runs", "0"),
        ("min_runs", "2.5"),
        ("max_quarantined_share", "101"),
        ("max_quarantine_days", "366"),
        ("max_quarantine_days", ""),
    ],
)
def test_the_policy_form_refuses_what_is_not_a_number_in_bounds(client_for, suite, lead, field,
                                                                 value):
    response = client_for(lead).post(url("settings_policy", suite), {**POLICY, field: value})
    assert response.status_code == 200
    form = response.context["policy_form"]
    assert field in form.errors
    suite.refresh_from_db()
    assert getattr(suite, field) == Suite._meta.get_field(field).get_default()
    assert not settings_events(suite).exists()


# --- fixture pin ---------------------------------------------------------------------


def test_the_fixture_pin_is_set_and_removed_with_audit(client_for, suite, lead):
    client = client_for(lead)
    response = client.post(url("settings_fixture_pin", suite),
                           {"fixture_manifest": f" sha256:{'4be1' * 16} ", "fixture_seed": "9137"})
    assert response.status_code == 302
    suite.refresh_from_db()
    assert suite.fixture_pin == rules.FixturePin("sha256:" + "4be1" * 16, 9137)
    client.post(url("settings_fixture_pin", suite), {"fixture_manifest": "", "fixture_seed": "5"})
    suite.refresh_from_db()
    assert (suite.fixture_manifest, suite.fixture_seed, suite.fixture_pin) == ("", None, None)
    notes = list(settings_events(suite).values_list("note", flat=True))
    assert notes == ["fixture pin set", "fixture pin removed"]


def test_a_pin_with_control_characters_is_refused(suite):
    with pytest.raises(ValidationError):
        fixture_pin_set(suite=suite, actor="@lea", manifest="sha256:\x00", seed=1)
    assert not settings_events(suite).exists()


# --- the new-test guard ------------------------------------------------------------------


def test_the_new_test_guard_says_what_its_runs_bound(client_for, suite, lead):
    html = client_for(lead).get(url("settings", suite)).content.decode()
    assert 'id="new-tests"' in html
    assert "<strong>new: 0/30 failed, rate ≤ 11.4% at 95%</strong>" in html
    assert "10% of its runs is caught 95.8% of the time" in html
    new_tests_set(suite=suite, actor="@lea", runs=10, share=0.5)
    html = client_for(lead).get(url("settings", suite)).content.decode()
    assert f"<strong>{rules.birth_sentence(10, 0)}</strong>" in html
    assert rules.birth_sentence(10, 0) == "new: 0/10 failed, rate ≤ 27.8% at 95%"
    assert f"caught {rules.catch_chance(0.1, 10):.1%}" in html
    assert "When more than 50% of a selection is new" in html


def test_saving_the_new_test_guard_audits_without_a_ledger_revision(client_for, suite, lead):
    revision = suite.ledger_revision
    response = client_for(lead).post(url("settings_new_tests", suite),
                                     {"new_test_runs": "50", "new_test_share": "20"})
    assert response.status_code == 302 and response["Location"].endswith("#new-tests")
    suite.refresh_from_db()
    assert (suite.new_test_runs, suite.new_test_share) == (50, 0.2)
    assert suite.ledger_revision == revision  # CI's measuring changes, not the ledger
    event = settings_events(suite).get()
    assert (event.before, event.after) == (
        {"new_test_runs": 30, "new_test_share": 0.3}, {"new_test_runs": 50, "new_test_share": 0.2})


@pytest.mark.parametrize(("runs", "share", "field"), [
    ("2", "30", "new_test_runs"), ("1001", "30", "new_test_runs"),
    ("30", "0", "new_test_share"), ("30", "101", "new_test_share"),
])
def test_the_new_test_guard_refuses_numbers_out_of_bounds(client_for, suite, lead, runs, share,
                                                          field):
    response = client_for(lead).post(url("settings_new_tests", suite),
                                     {"new_test_runs": runs, "new_test_share": share})
    assert response.status_code == 200
    assert field in response.context["new_tests_form"].errors
    with pytest.raises(ValidationError) as refused:
        new_tests_set(suite=suite, actor="@lea", runs=int(runs), share=float(share) / 100)
    assert field in refused.value.message_dict
    assert not settings_events(suite).exists()


# --- the measure budget ------------------------------------------------------------------


def test_the_measure_budget_is_shown_and_saved_audited_without_a_ledger_revision(
        client_for, suite, lead):
    html = client_for(lead).get(url("settings", suite)).content.decode()
    assert 'id="measure-budget"' in html
    assert "once about 300 seconds are spent" in html
    revision = suite.ledger_revision
    response = client_for(lead).post(url("settings_measure_budget", suite),
                                     {"measure_budget": "90"})
    assert response.status_code == 302 and response["Location"].endswith("#measure-budget")
    suite.refresh_from_db()
    assert (suite.measure_budget, suite.ledger_revision) == (90, revision)
    event = settings_events(suite).get()
    assert (event.actor, event.before, event.after) == (
        "@lea", {"measure_budget": 300}, {"measure_budget": 90})


@pytest.mark.parametrize("seconds", ["0", "86401", "ten"])
def test_the_measure_budget_refuses_what_is_not_seconds_in_bounds(client_for, suite, lead,
                                                                 seconds):
    response = client_for(lead).post(url("settings_measure_budget", suite),
                                     {"measure_budget": seconds})
    assert response.status_code == 200
    assert "measure_budget" in response.context["measure_budget_form"].errors
    if seconds.isdigit():
        with pytest.raises(ValidationError) as refused:
            measure_budget_set(suite=suite, actor="@lea", seconds=int(seconds))
        assert "measure_budget" in refused.value.message_dict
    assert not settings_events(suite).exists()


def test_only_a_lead_sets_the_measure_budget(client_for, suite, viewer):
    response = client_for(viewer).post(url("settings_measure_budget", suite),
                                       {"measure_budget": "90"})
    assert response.status_code in (403, 404)
    suite.refresh_from_db()
    assert suite.measure_budget == 300


# --- every change is audited; the page's cost is bounded ---------------------------------


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("settings_policy", {**POLICY, "max_quarantine_days": "14"}),
        ("settings_new_tests", {"new_test_runs": "20", "new_test_share": "30"}),
        ("settings_measure_budget", {"measure_budget": "60"}),
        ("settings_fixture_pin", {"fixture_manifest": "sha256:" + "abc0" * 16, "fixture_seed": ""}),
        ("settings_tier_rule_add", {"glob": "tests/pinned/*", "tier": "1"}),
        ("settings_member_set", {"username": "vic", "role": "owner"}),
        ("settings_token_create", {"name": "", "scope": "read"}),
    ],
)
def test_every_settings_change_writes_an_audit_event(client_for, suite, lead, viewer, name, data):
    response = client_for(lead).post(url(name, suite), data)
    assert response.status_code in (200, 302)
    event = settings_events(suite).get()
    assert event.actor == "@lea"
    assert event.before != event.after


def test_the_settings_page_query_count_is_bounded(client_for, suite, lead,
                                                  django_assert_max_num_queries):
    client = client_for(lead)

    def queries():
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url("settings", suite)).status_code == 200
        return len(captured)

    few = queries()
    for i in range(12):
        user = get_user_model().objects.create_user(f"member{i}", password="x")
        member_change(suite=suite, username=user.username, role="viewer", actor="@lea")
        client.post(url("settings_token_create", suite), {"name": f"t{i}", "scope": "read"},
                    follow=True)  # the page that shows the secret, once
        client.post(url("settings_tier_rule_add", suite), {"glob": f"tests/{i}/*", "tier": "1"})
    assert queries() == few
    with django_assert_max_num_queries(13):
        client.get(url("settings", suite))
