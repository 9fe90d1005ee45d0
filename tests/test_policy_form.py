"""The policy form of the settings page: readable labels, the budget and the cap typed in
percent as every other page shows them (stored as fractions), and a cap lowered below the
quarantined share saved only once the lead has seen the figures and confirmed."""

from datetime import timedelta

import pytest
from django.urls import reverse

from ledger.forms.settings import PolicyForm, as_percent
from ledger.models import AuditEvent, Suite
from ledger.quarantine import quarantine_create
from runs.ingest import report_ingest
from tests.helpers import body, measurement

POLICY = {"max_upper_rate": "2", "min_runs": "200", "max_quarantined_share": "5",
          "max_quarantine_days": "30"}


def post(client, suite, **changes):
    return client.post(reverse("settings_policy", args=[suite.slug]), {**POLICY, **changes})


def policy_events(suite):
    return AuditEvent.objects.filter(suite=suite, action=AuditEvent.Action.SETTINGS)


@pytest.fixture
def two_quarantined(suite, today):
    """Forty known nodes, two of them quarantined: a share of 5%, the default cap."""
    nodes = [f"tests/test_many.py::test_{i}" for i in range(40)]
    report_ingest(suite=suite, body=body([measurement(nodeid) for nodeid in nodes]), actor="ci")
    for nodeid in nodes[:2]:
        quarantine_create(suite=suite, nodeid=nodeid, owner="@finley", evidence="ci/run-1",
                          expires=today + timedelta(days=10), actor="@finley", today=today)


def test_the_fields_have_readable_labels_and_help(client_for, suite, lead):
    html = client_for(lead).get(reverse("settings", args=[suite.slug])).content.decode()
    for label in ("Failure-rate budget (%)", "Fewest runs per measurement",
                  "Quarantine cap (% of the test set)", "Longest quarantine (days)"):
        assert f">{label}</label>" in html
    assert "In percent: 12 means 12%." in html
    assert ">max_upper_rate</label>" not in html


def test_the_page_shows_the_stored_fractions_as_percents(client_for, suite, lead):
    Suite.objects.filter(pk=suite.pk).update(max_upper_rate=0.0001, max_quarantined_share=0.12)
    html = client_for(lead).get(reverse("settings", args=[suite.slug])).content.decode()
    assert 'name="max_upper_rate" value="0.01"' in html
    assert 'name="max_quarantined_share" value="12"' in html


@pytest.mark.parametrize(("fraction", "shown"), [(0.12, "12"), (0.07, "7"), (0.0001, "0.01"),
                                                 (0.025, "2.5"), (1.0, "100"), (0.0, "0")])
def test_a_fraction_is_shown_as_its_percent_and_read_back_the_same(fraction, shown):
    assert as_percent(fraction) == shown
    form = PolicyForm({**POLICY, "max_quarantined_share": shown})
    assert form.is_valid(), form.errors
    assert form.cleaned_data["max_quarantined_share"] == fraction


def test_typing_12_stores_twelve_percent(client_for, suite, lead):
    response = post(client_for(lead), suite, max_quarantined_share="12", max_upper_rate="1.5")
    assert response.status_code == 302
    suite.refresh_from_db()
    assert (suite.max_quarantined_share, suite.max_upper_rate) == (0.12, 0.015)
    assert policy_events(suite).get().after == {"max_upper_rate": 0.015,
                                                "max_quarantined_share": 0.12}


@pytest.mark.parametrize("field", ["max_upper_rate", "max_quarantined_share"])
def test_more_than_100_percent_is_a_form_error(client_for, suite, lead, field):
    response = post(client_for(lead), suite, **{field: "150"})
    assert response.status_code == 200
    assert response.context["policy_form"].errors[field] == [
        "Ensure this value is less than or equal to 100.0."]
    assert not policy_events(suite).exists()


def test_the_bounds_are_the_model_validators_in_percent():
    fields = PolicyForm.base_fields
    assert (fields["max_upper_rate"].min_value, fields["max_upper_rate"].max_value) == (0.01, 100)
    assert (fields["max_quarantined_share"].min_value,
            fields["max_quarantined_share"].max_value) == (0, 100)


def test_lowering_the_cap_below_the_share_warns_and_saves_nothing(
    client_for, suite, lead, two_quarantined
):
    response = post(client_for(lead), suite, max_quarantined_share="2")
    assert response.status_code == 200
    html = response.content.decode()
    assert ("The quarantined share is 5% (2 of 40 known nodes): a cap of 2% leaves 2 entries "
            "over it.") in html
    assert "The cap is 5% now." in html and "Lower the cap anyway" in html
    assert 'name="confirm" value="1"' in html
    assert 'name="max_quarantined_share" value="2"' in html  # what the lead typed, kept
    assert Suite.objects.get(pk=suite.pk).max_quarantined_share == 0.05
    assert not policy_events(suite).exists()


def test_the_lower_cap_is_saved_once_confirmed(client_for, suite, lead, two_quarantined):
    response = post(client_for(lead), suite, max_quarantined_share="2", confirm="1",
                    note="tighter")
    assert response.status_code == 302 and response["Location"].endswith("#policy")
    assert Suite.objects.get(pk=suite.pk).max_quarantined_share == 0.02
    event = policy_events(suite).get()
    assert (event.actor, event.note) == ("@lea", "tighter")
    assert (event.before, event.after) == ({"max_quarantined_share": 0.05},
                                           {"max_quarantined_share": 0.02})


@pytest.mark.parametrize("cap", ["5", "10"])
def test_a_cap_the_share_stays_within_is_saved_without_asking(
    client_for, suite, lead, two_quarantined, cap
):
    response = post(client_for(lead), suite, max_quarantined_share=cap, min_runs="150")
    assert response.status_code == 302
    assert Suite.objects.get(pk=suite.pk).min_runs == 150


def test_a_lower_cap_with_nothing_quarantined_is_saved_without_asking(client_for, suite, lead):
    assert post(client_for(lead), suite, max_quarantined_share="1").status_code == 302
    assert Suite.objects.get(pk=suite.pk).max_quarantined_share == 0.01
