"""Every gate answer stores what it was judged against (the ledger revision, the policy and
its hash, the fixture pin, the share figures, each row's entry state at upload) and shows
those stored values later, whatever the suite has become since."""

from __future__ import annotations

from datetime import timedelta

import pytest

from flakeboard import rules
from ledger.models import Suite
from ledger.quarantine import quarantine_clear, quarantine_create
from ledger.settings_services import fixture_pin_set, policy_update
from runs.ingest import report_ingest, signals_ingest
from runs.models import Report
from runs.outcomes import stored_outcome
from runs.results import answer
from tests.helpers import body, measurement, node_page, record

FLAKY = "tests/test_pay.py::test_capture_timeout"
CLEAN = [f"tests/test_many.py::test_{i:02}" for i in range(30)]
PIN = "sha256:" + "abc0" * 16


@pytest.fixture
def quarantined(suite, today):
    report_ingest(suite=suite, body=body([measurement(n) for n in CLEAN]), actor="ci")
    return quarantine_create(
        suite=suite, nodeid=FLAKY, owner="@finley", evidence="ci/run-1", actor="@finley",
        expires=today + timedelta(days=20), today=today,
    )


def upload(suite, commit="abc"):
    rows = [measurement(n) for n in CLEAN] + [measurement(FLAKY, fails=6)]
    return report_ingest(suite=suite, body=body(rows), actor="ci", query={"commit": commit})


def test_a_report_stores_its_revision_policy_share_and_row_states(suite, quarantined):
    outcome = upload(suite)
    report = outcome.upload
    suite.refresh_from_db()
    assert report.ledger_revision == suite.ledger_revision
    assert report.policy == rules.policy_numbers(suite.policy)
    assert report.policy_hash == rules.policy_hash(suite.policy)
    assert (report.size_source, report.over_cap) == ("known_nodes", False)
    states = dict(report.measurements.values_list("node__nodeid", "entry_state"))
    assert states[FLAKY] == "active" and states[CLEAN[0]] == ""

    said = answer(outcome)
    assert said["judged_against"] == {
        "ledger_revision": suite.ledger_revision,
        "policy": rules.policy_numbers(suite.policy),
        "policy_hash": rules.policy_hash(suite.policy),
    }
    assert said["share"]["size_source"] == "known_nodes"
    flaky = next(m for m in said["measurements"] if m["nodeid"] == FLAKY)
    assert flaky["entry"]["id"] == quarantined.pk and flaky["entry"]["state"] == "active"


def test_a_report_keeps_its_own_policy_and_states_after_the_suite_changes(
    suite, quarantined, client_for, viewer, today
):
    report = upload(suite).upload
    old_hash = report.policy_hash
    policy_update(suite=suite, actor="@lea", max_upper_rate=0.05, min_runs=100,
                  max_quarantined_share=0.2, max_quarantine_days=60)
    quarantine_clear(entry=quarantined, note="fixed", actor="@finley")
    suite = Suite.objects.get(pk=suite.pk)
    assert rules.policy_hash(suite.policy) != old_hash

    said = answer(stored_outcome(Report.objects.get(pk=report.pk)))  # its GET
    assert said["judged_against"]["policy_hash"] == old_hash
    assert said["judged_against"]["policy"]["max_upper_rate"] == 0.02
    flaky = next(m for m in said["measurements"] if m["nodeid"] == FLAKY)
    assert flaky["entry"]["state"] == "active"
    # The same body again is judged as the gate stands now, and stores nothing.
    again = upload(suite)
    assert again.duplicate and Report.objects.count() == 2
    now = answer(again)
    assert now["judged_against"]["policy_hash"] == rules.policy_hash(suite.policy)
    assert next(m for m in now["measurements"] if m["nodeid"] == FLAKY)["entry"] is None

    page = client_for(viewer).get(f"/suites/{suite.slug}/reports/{report.pk}/").content.decode()
    assert old_hash in page and "budget 0.02" in page
    assert "Active" in page and "cleared since" in page


def test_the_node_page_draws_each_measurement_against_its_own_budget(
    suite, quarantined, client_for, viewer
):
    upload(suite)
    policy_update(suite=suite, actor="@lea", max_upper_rate=0.05, min_runs=200,
                  max_quarantined_share=0.05, max_quarantine_days=30)
    upload(Suite.objects.get(pk=suite.pk), commit="def")
    response = client_for(viewer).get(node_page(suite.slug, FLAKY))
    budgets = response.context["history"].chart["datasets"][1]["data"]
    assert budgets == [0.02, 0.05]


def test_a_batch_stores_its_pin_and_row_states(suite, quarantined):
    fixture_pin_set(suite=suite, actor="@lea", manifest=PIN, seed=7)
    records = [record(FLAKY, status="frozen", fixture_manifest=PIN, seed=7,
                      freeze_expires="2099-01-01")]
    outcome = signals_ingest(suite=suite, body=body(records), actor="ci")
    batch = outcome.upload
    assert (batch.pin_manifest, batch.pin_seed) == (PIN, 7)
    assert batch.policy_hash == rules.policy_hash(Suite.objects.get(pk=suite.pk).policy)
    said = answer(outcome)
    assert said["fixture_pin"] == {"manifest": PIN, "seed": 7}
    assert said["records"][0]["entry"]["state"] == "active"
    assert said["judged_against"]["ledger_revision"] == batch.ledger_revision


def test_a_report_over_the_cap_stores_it(suite, today):
    quarantine_create(
        suite=suite, nodeid=FLAKY, owner="@finley", evidence="ci/run-1", actor="@lea",
        expires=today + timedelta(days=5), today=today, imported=True,
    )
    report = report_ingest(
        suite=suite, body=body({"measurements": [measurement(FLAKY)], "selected_total": 1000}),
        actor="ci",
    ).upload
    assert (report.size_source, report.test_set_size, report.over_cap, report.reason) == (
        "known_nodes", 1, True, "quarantine_cap_exceeded",
    )
    assert Report.objects.get().over_cap
