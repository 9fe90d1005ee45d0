"""Release when fixed (issue 20): the ready-to-clear flag, set and unset at ingest; shown
beside the state, filtered on, served in the full ledger; cleared in one click with its
measurements as evidence; and what it takes to clear, on the entry page. Never ready while
a measurement found the node order-dependent, or CI saw it fail since (issue 37).

Runs on whichever database DATABASE_URL selects (SQLite and PostgreSQL)."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from flakeboard.rules import INFRASTRUCTURE_MIN_TESTS as INFRASTRUCTURE
from junit.ingest import junit_ingest
from ledger.forms.settings import PolicyForm
from ledger.models import AuditEvent, QuarantineEntry, Suite
from ledger.quarantine import quarantine_create
from ledger.settings_services import policy_update
from runs.ingest import report_ingest, signals_ingest
from tests.api_http import new_token
from tests.helpers import body, measurement, node_page, record
from tests.junit_files import junit_xml
from tests.world import module_world

NODE = "tests/test_pay.py::test_refund_retry"
OTHER = "tests/test_pay.py::test_refund_partial"
HTMX = {"HX-Request": "true"}
NUMBERS = {"max_upper_rate": 0.02, "min_runs": 200, "max_quarantined_share": 0.5,
           "max_quarantine_days": 30}  # the policy, as the entry fixture leaves it
COMMITS = itertools.count()  # each upload a new commit: the same body is stored once


def add_entry(suite, today):
    rows = [measurement(f"tests/test_many.py::test_{i}") for i in range(40)]
    report_ingest(suite=suite, body=body([*rows, measurement(NODE, fails=7),
                                          measurement(OTHER, fails=6)]), actor="ci")
    Suite.objects.filter(pk=suite.pk).update(max_quarantined_share=0.5)
    return quarantine_create(suite=suite, nodeid=NODE, owner="@finley", n=200, fails=7,
                             expires=today + timedelta(days=5), evidence="ci/run-1",
                             actor="@finley", today=today)


# entry: a quarantined node of a suite of forty-two, measured before it was quarantined.
build_world, entry = module_world("entry", add_entry)


def measure(suite, *fails: int, nodeid: str = NODE) -> list[int]:
    """One report per count of failures (200 runs each): the reports' ids."""
    reports = []
    for count in fails:
        reports.append(report_ingest(
            suite=suite, body=body([measurement(nodeid, fails=count)]), actor="ci",
            query={"commit": f"commit-{next(COMMITS)}"},
        ).upload.pk)
    return reports


def fresh(entry) -> QuarantineEntry:
    return QuarantineEntry.objects.get(pk=entry.pk)


# --- the flag, at ingest ----------------------------------------------------------------


def test_ready_after_k_clean_measurements_and_unset_by_a_failing_one(suite, entry):
    assert suite.clear_after_clean_measurements == 3
    measure(suite, 0, 0)
    assert not fresh(entry).ready_to_clear
    revision = Suite.objects.get(pk=suite.pk).ledger_revision
    measure(suite, 0)
    ready = fresh(entry)
    assert ready.ready_to_clear and ready.ready_since is not None
    assert [seen["clean"] for seen in ready.trail] == [True, True, True]
    # The full ledger view shows the flag: its change is a new revision.
    assert Suite.objects.get(pk=suite.pk).ledger_revision == revision + 1
    assert list(QuarantineEntry.objects.ready_to_clear()) == [ready]
    measure(suite, 0)
    assert fresh(entry).ready_since == ready.ready_since  # still ready since then
    measure(suite, 1)  # 1 of 200 is over the 2% budget
    unset = fresh(entry)
    assert not unset.ready_to_clear and unset.ready_since is None
    assert list(QuarantineEntry.objects.ready_to_clear()) == []


def test_measurements_before_the_entry_do_not_count(suite, today):
    measure(suite, 0, 0, 0, nodeid=OTHER)  # clean, before any entry
    Suite.objects.filter(pk=suite.pk).update(max_quarantined_share=1.0)
    late = quarantine_create(suite=suite, nodeid=OTHER, owner="@finley", actor="@finley",
                             expires=today + timedelta(days=5), evidence="ci/run-2",
                             today=today)
    assert late.trail == [] and not late.ready_to_clear
    measure(suite, 0, 0, nodeid=OTHER)
    assert not fresh(late).ready_to_clear  # two since creation: fewer than three
    measure(suite, 0, nodeid=OTHER)
    assert fresh(late).ready_to_clear


def test_a_dry_run_and_a_duplicate_change_no_flag(suite, entry):
    measure(suite, 0, 0)
    upload = body([measurement(NODE)])
    report_ingest(suite=suite, body=upload, actor="ci", dry_run=True)
    assert not fresh(entry).ready_to_clear and len(fresh(entry).trail) == 2
    report_ingest(suite=suite, body=upload, actor="ci")
    report_ingest(suite=suite, body=upload, actor="ci")  # stored once
    assert fresh(entry).ready_to_clear and len(fresh(entry).trail) == 3


def test_the_count_is_the_suites_policy_and_a_new_count_flags_again(suite, entry, lead):
    measure(suite, 0, 0)
    policy_update(suite=suite, actor="@lea", **NUMBERS, clear_after_clean_measurements=2)
    assert fresh(entry).ready_to_clear
    policy_update(suite=suite, actor="@lea", **NUMBERS)  # the count stays
    assert Suite.objects.get(pk=suite.pk).clear_after_clean_measurements == 2
    policy_update(suite=suite, actor="@lea", **NUMBERS, clear_after_clean_measurements=4)
    assert not fresh(entry).ready_to_clear


def test_ingest_reads_the_entries_once_whatever_their_number(suite, entry, today):
    """Two queries per report for the flags (the entries, one bulk update), not per row."""
    nodes = [f"tests/test_many.py::test_{i}" for i in range(6)]
    for nodeid in nodes:
        quarantine_create(suite=suite, nodeid=nodeid, owner="@finley", actor="@finley",
                          expires=today + timedelta(days=5), evidence="ci/run-3", today=today)

    def queries(nodeids, commit):
        with CaptureQueriesContext(connection) as captured:
            report_ingest(suite=suite, body=body([measurement(n) for n in nodeids]),
                          actor="ci", query={"commit": commit})
        return len(captured)

    assert queries([NODE], "one") == queries([NODE, *nodes], "seven")


# --- shown, filtered, served ----------------------------------------------------------


def test_the_badge_beside_the_state_and_the_filter(client_for, viewer, suite, entry, today):
    other = quarantine_create(suite=suite, nodeid=OTHER, owner="@finley", actor="@finley",
                              expires=today + timedelta(days=20), evidence="ci/run-4",
                              today=today)
    client = client_for(viewer)
    ledger = reverse("ledger", args=[suite.slug])
    assert 'class="badge ready"' not in client.get(ledger).content.decode()
    measure(suite, 0, 0, 0)
    html = client.get(ledger).content.decode()
    assert html.count('class="badge ready"') == 1
    filtered = client.get(ledger, {"ready": "on"}).content.decode()
    assert NODE in filtered and OTHER not in filtered
    # Expiring and ready at once: a flag beside the state, not a state.
    page = client.get(reverse("entry", args=[suite.slug, entry.pk])).content.decode()
    assert "Expiring</span>" in page and 'class="badge ready"' in page
    node = client.get(node_page(suite.slug, NODE)).content.decode()
    assert 'class="badge ready"' in node
    other_page = client.get(reverse("entry", args=[suite.slug, other.pk])).content.decode()
    assert 'class="badge ready"' not in other_page


def test_the_full_ledger_view_carries_the_flag(client, suite, entry):
    measure(suite, 0, 0, 0)
    answer = client.get(reverse("api:ledger", kwargs={"suite": suite.slug}), {"view": "full"},
                        headers={"Authorization": f"Bearer {new_token(suite, 'read')}"})
    full = answer.json()
    assert full["clear_after_clean_measurements"] == 3
    served = {e["node"]: e for e in full["entries"]}
    assert served[NODE]["ready_to_clear"] is True
    assert served[NODE]["ready_since"] == fresh(entry).ready_since.isoformat()
    assert served[NODE]["state"] == "expiring"


# --- one click ------------------------------------------------------------------------


def test_one_click_clears_with_the_measurements_as_evidence(client_for, owner, suite, entry):
    reports = measure(suite, 5, 0, 0, 0)
    response = client_for(owner).post(reverse("entry_clear_ready", args=[suite.slug, entry.pk]))
    assert response.status_code == 302
    cleared = fresh(entry)
    assert cleared.cleared_at is not None
    event = AuditEvent.objects.get(entry=entry, action=AuditEvent.Action.CLEAR)
    assert event.actor == "@finley" and event.note == cleared.cleared_note
    assert event.note.startswith("Ready to clear: the last 3 measurements")
    for report in reports[1:]:
        assert f"0 of 200 runs failed: http://testserver/suites/{suite.slug}/reports/{report}/" \
            in event.note
    assert f"/reports/{reports[0]}/" not in event.note  # the failing one is not evidence


def test_one_click_from_a_ledger_row(client_for, owner, suite, entry):
    measure(suite, 0, 0, 0)
    client = client_for(owner)
    row = client.get(reverse("ledger", args=[suite.slug])).content.decode()
    assert reverse("entry_clear_ready", args=[suite.slug, entry.pk]) in row
    answer = client.post(reverse("entry_clear_ready", args=[suite.slug, entry.pk]),
                         {"place": "row"}, headers=HTMX)
    assert answer.status_code == 200 and "<html" not in answer.content.decode()
    assert "Cleared as fixed" in answer.content.decode()
    assert fresh(entry).cleared_at is not None


def test_one_click_refuses_an_entry_that_is_not_ready(client_for, owner, suite, entry):
    measure(suite, 0, 0)
    page = client_for(owner).get(reverse("entry", args=[suite.slug, entry.pk]))
    assert reverse("entry_clear_ready", args=[suite.slug, entry.pk]) not in page.content.decode()
    response = client_for(owner).post(reverse("entry_clear_ready", args=[suite.slug, entry.pk]),
                                      follow=True)
    assert "not ready to clear" in response.content.decode()
    assert fresh(entry).cleared_at is None
    assert not AuditEvent.objects.filter(entry=entry, action=AuditEvent.Action.CLEAR).exists()


# --- what it takes to clear -------------------------------------------------------------


def test_what_it_takes_on_the_entry_page(client_for, viewer, suite, entry):
    measure(suite, 5)  # the node's recent rate: 5 of 200, 2.5%
    html = client_for(viewer).get(reverse("entry", args=[suite.slug, entry.pk])).content.decode()
    takes = html.split('id="what-it-takes"')[1].split("</section>")[0]
    assert '<span class="figure">200</span> runs and no failure' in takes
    assert '<span class="figure">189</span> runs' in takes
    assert '<span class="figure">2.5%</span>' in takes
    assert "a chance of <span class=\"figure\">0.6%</span>" in takes
    assert "Fix the test" in takes
    assert "0 so far" in takes


def test_before_any_measurement_the_rate_is_the_entrys_own(client_for, viewer, suite, entry):
    html = client_for(viewer).get(reverse("entry", args=[suite.slug, entry.pk])).content.decode()
    assert '<span class="figure">3.5%</span>' in html  # 7 of 200, the quarantined measurement


def test_the_count_on_the_settings_page(client_for, lead, suite, entry):
    client = client_for(lead)
    page = client.get(reverse("settings", args=[suite.slug])).content.decode()
    assert 'name="clear_after_clean_measurements"' in page
    numbers = PolicyForm.for_suite(Suite.objects.get(pk=suite.pk)).initial  # as the page shows
    url = reverse("settings_policy", args=[suite.slug])
    refused = client.post(url, {**numbers, "clear_after_clean_measurements": "21"})
    assert refused.status_code == 200
    assert client.post(url, {**numbers, "clear_after_clean_measurements": "5"}).status_code == 302
    assert Suite.objects.get(pk=suite.pk).clear_after_clean_measurements == 5
    event = AuditEvent.objects.filter(suite=suite, action=AuditEvent.Action.SETTINGS).last()
    assert event.after == {"clear_after_clean_measurements": 5}


def test_the_overview_counts_the_ready_entries_and_links_to_them(client_for, viewer, suite,
                                                                 entry):
    client = client_for(viewer)
    overview = reverse("overview", args=[suite.slug])
    ledger = reverse("ledger", args=[suite.slug])
    tile = (f'<a class="tile{{}}" href="{ledger}?ready=on"><span class="figure">{{}}</span> '
            "ready to clear")
    assert tile.format(" neutral", 0) in client.get(overview).content.decode()  # grey at 0
    measure(suite, 0, 0, 0)
    assert tile.format("", 1) in client.get(overview).content.decode()
    filtered = client.get(ledger, {"ready": "on"}).content.decode()  # where it leads
    assert NODE in filtered and 'class="badge ready"' in filtered


# --- never ready while CI's order or CI itself shows the node failing (issue 37) ----------


def junit(suite, outcome: str, commit: str = "c-junit"):
    """A JUnit file of CI in which the node had ``outcome``, among five passing tests."""
    cases = [("tests.test_pay", "test_refund_retry", outcome),
             *(("tests.test_many", f"test_{i}", "passed") for i in range(5))]
    junit_ingest(suite=suite, body=junit_xml(*cases), actor="ci",
                 query={"commit": commit, "branch": "main", "job": "py3.12"})


def test_a_victim_measured_clean_on_its_own_is_never_ready(suite, entry):
    # measure found it passes on its own and fails after the tests before it.
    for _ in range(3):
        report_ingest(suite=suite, actor="ci", query={"commit": f"commit-{next(COMMITS)}"},
                      body=body([measurement(NODE, classification="order_dependent")]))
    victim = fresh(entry)
    assert not victim.ready_to_clear
    assert [seen["clean"] for seen in victim.trail] == [False] * 3
    assert victim.trail[-1]["classification"] == "order_dependent"
    measure(suite, 0, 0, 0)  # plain clean measurements after it do count
    assert fresh(entry).ready_to_clear


@pytest.mark.parametrize("saw", ["junit", "gate"])
def test_a_failure_ci_saw_after_the_clean_measurements_unsets_ready(
        client_for, viewer, suite, entry, saw):
    measure(suite, 0, 0, 0)
    assert fresh(entry).ready_to_clear
    revision = Suite.objects.get(pk=suite.pk).ledger_revision
    if saw == "junit":
        junit(suite, "passed", commit="c-pass")  # a pass changes nothing
        assert fresh(entry).ready_to_clear
        junit(suite, "failed", commit="c-fail-1")
        junit(suite, "failed", commit="c-fail-2")
    else:
        signals_ingest(suite=suite, actor="ci", body=body({
            "patch": "p", "commit": "c-fail-2",
            "records": [record(NODE, prop="fail"), record(OTHER)]}))
    unset = fresh(entry)
    assert not unset.ready_to_clear and unset.ready_since is None
    assert unset.trail[-1]["ci"] == saw and unset.trail[-1]["commit"] == "c-fail-2"
    assert unset.trail[-1]["count"] == (2 if saw == "junit" else 1)
    assert Suite.objects.get(pk=suite.pk).ledger_revision == revision + 1
    html = client_for(viewer).get(reverse("entry", args=[suite.slug, entry.pk])).content.decode()
    takes = html.split('id="what-it-takes"')[1].split("</section>")[0]
    assert "0 so far" in takes and "CI saw the node fail since its last measurement" in takes
    assert "c-fail-2" in takes
    # Its recent rate is its measurements' alone.
    assert unset.trail_runs == [(200, 0)] * 3
    measure(suite, 0, 0)
    assert not fresh(entry).ready_to_clear
    measure(suite, 0)
    assert fresh(entry).ready_to_clear


def test_one_click_after_ci_saw_the_node_fail_refuses_it(client_for, owner, suite, entry):
    """A page read while the entry was ready, clicked after CI saw its node fail: the trail
    ends in a sighting (no report, no runs), and the answer is the clear's refusal."""
    measure(suite, 0, 0, 0)
    junit(suite, "failed", commit="c-fail-1")
    response = client_for(owner).post(reverse("entry_clear_ready", args=[suite.slug, entry.pk]),
                                      follow=True)
    assert response.status_code == 200
    assert "not ready to clear" in response.content.decode()
    assert fresh(entry).cleared_at is None


def test_a_failure_in_a_broken_runners_file_is_no_sighting(suite, entry):
    measure(suite, 0, 0, 0)
    # Every test failed: the file is an infrastructure failure, and says nothing of the node.
    cases = [("tests.test_pay", "test_refund_retry", "failed"),
             *(("tests.test_many", f"test_{i}", "failed") for i in range(INFRASTRUCTURE))]
    junit_ingest(suite=suite, body=junit_xml(*cases), actor="ci",
                 query={"commit": "c-broken", "branch": "main", "job": "py3.12"})
    assert fresh(entry).ready_to_clear
