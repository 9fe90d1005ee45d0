"""The quarantined share is computed once, against the test set SPEC 2.2 names: nodes seen
in an upload within 30 days, or holding an open entry. An upload's own nodes belong to it
once, a dry run answers what the upload would, and a node quarantined by hand and cleared
does not stay in the test set."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError

from ledger.models import Node
from ledger.quarantine import quarantine_clear, quarantine_create
from ledger.selectors import known_nodes, share_figures
from runs.ingest import report_ingest
from runs.models import Measurement, Report
from tests.helpers import body, measurement

QUARANTINED = [f"tests/test_pay.py::test_flaky_{i}" for i in range(3)]
NEW = [f"tests/test_new.py::test_{i}" for i in range(47)]


@pytest.fixture
def three_entries(suite, today):
    """A suite whose only nodes are three imported entries (no upload has named them)."""
    for nodeid in QUARANTINED:
        quarantine_create(
            suite=suite, nodeid=nodeid, owner="@finley", evidence="ci/run-1", actor="@lea",
            expires=today + timedelta(days=20), today=today, imported=True,
        )
    return suite


def first_report():
    rows = [measurement(nodeid, n=200, fails=3) for nodeid in QUARANTINED]
    return body(rows + [measurement(nodeid) for nodeid in NEW])


def test_a_first_report_over_the_cap_fails_with_its_nodes_counted_once(three_entries):
    report = report_ingest(suite=three_entries, body=first_report(), actor="ci").upload
    assert (report.status, report.reason, report.exit_code) == (
        "FAIL", "quarantine_cap_exceeded", 1,
    )
    assert (report.quarantined, report.test_set_size) == (3, 50)
    assert report.share == pytest.approx(0.06)
    again = report_ingest(
        suite=three_entries, body=first_report(), actor="ci", query={"commit": "b"}
    ).upload
    assert (again.reason, again.quarantined, again.test_set_size) == (
        "quarantine_cap_exceeded", 3, 50,
    )


def test_a_dry_run_answers_exactly_what_the_upload_does(three_entries):
    dry = report_ingest(suite=three_entries, body=first_report(), actor="ci", dry_run=True)
    assert not Report.objects.exists() and not Measurement.objects.exists()
    assert Node.objects.count() == len(QUARANTINED)
    real = report_ingest(suite=three_entries, body=first_report(), actor="ci")

    def answer(outcome):
        upload = outcome.upload
        rows = [(m["nodeid"], m["status"], m["reason"]) for m in outcome.rows]
        return (upload.status, upload.reason, upload.exit_code, upload.quarantined,
                upload.test_set_size, upload.share, rows)

    assert answer(dry) == answer(real)


def test_a_dry_run_leaves_no_node_behind(suite):
    report_ingest(suite=suite, body=first_report(), actor="ci", dry_run=True)
    assert not Node.objects.exists()


def test_a_hand_made_node_is_in_the_test_set_only_while_it_holds_an_entry(suite, today):
    seen = [f"tests/test_real.py::test_{i}" for i in range(20)]
    report_ingest(suite=suite, body=body([measurement(n) for n in seen]), actor="ci")
    # Twenty junk entries, created and cleared: none may enlarge the test set.
    for i in range(20):
        entry = quarantine_create(
            suite=suite, nodeid=f"tests/test_junk.py::test_{i}", owner="@finley",
            evidence="ci/run-1", actor="@finley", expires=today + timedelta(days=5),
            today=today,
        )
        quarantine_clear(entry=entry, note="junk", actor="@finley")
    assert known_nodes(suite, today).count() == 20
    assert share_figures(suite, today).size == 20

    quarantine_create(
        suite=suite, nodeid=seen[0], owner="@finley", evidence="ci/run-2", actor="@finley",
        expires=today + timedelta(days=5), today=today,
    )  # 1 of 20: at the 5% cap
    with pytest.raises(ValidationError) as refused:
        quarantine_create(
            suite=suite, nodeid=seen[1], owner="@finley", evidence="ci/run-3",
            actor="@finley", expires=today + timedelta(days=5), today=today,
        )
    codes = [e.code for errors in refused.value.error_dict.values() for e in errors]
    assert codes == ["cap_exceeded"]
    report = report_ingest(
        suite=suite, body=body([measurement(n) for n in seen]), actor="ci",
        query={"commit": "c"},
    ).upload
    assert (report.quarantined, report.test_set_size, report.status) == (1, 20, "OK")


def test_a_hand_made_node_joins_the_test_set_when_an_upload_names_it(suite, today):
    quarantine_create(
        suite=suite, nodeid=QUARANTINED[0], owner="@finley", evidence="ci/run-1",
        actor="@lea", expires=today + timedelta(days=5), today=today, imported=True,
    )
    node = Node.objects.get()
    assert (node.first_seen, node.last_seen) == (None, None)
    report_ingest(suite=suite, body=body([measurement(QUARANTINED[0])]), actor="ci")
    node.refresh_from_db()
    assert (node.first_seen, node.last_seen) == (today, today)
