"""Ingest services: validate whole, evaluate against the ledger, store once, roll up."""

from datetime import timedelta

import pytest

from ledger.models import Node
from ledger.quarantine import quarantine_create
from ledger.tiers import tier_rule_add
from runs.ingest import report_ingest, signals_ingest
from runs.models import Measurement, NodeVerdict, ReasonRollup, Report, VerdictBatch
from runs.rollups import counts_from_raw, counts_from_rollups, rebuild_rollups
from runs.wire import UploadInvalid
from tests.helpers import body, measurement, record

FLAKY = "tests/test_ingest.py::test_stream_backpressure"


def many(k=40):
    return [measurement(f"tests/test_many.py::test_{i}") for i in range(k)]


def test_report_gates_each_measurement_and_stores_once(suite):
    rows = [*many(), measurement(FLAKY, fails=5, upper95=0.0537)]
    outcome = report_ingest(suite=suite, body=body(rows), actor="ci", query={"commit": "abc"})
    report = outcome.upload
    assert (report.status, report.reason, report.exit_code) == ("FAIL", "over_budget", 1)
    flaky = Measurement.objects.get(node__nodeid=FLAKY)
    assert flaky.flags == ["upper95_mismatch"]
    assert flaky.upper95 == pytest.approx(0.0572, abs=5e-5)
    again = report_ingest(suite=suite, body=body(rows), actor="ci", query={"commit": "abc"})
    assert again.duplicate and again.upload.pk == report.pk
    assert Report.objects.count() == 1 and Measurement.objects.count() == 41


def test_quarantined_node_warns_and_expired_entry_fails(suite, today):
    report_ingest(suite=suite, body=body(many()), actor="ci")
    entry = quarantine_create(suite=suite, nodeid=FLAKY, owner="@finley", evidence="ci/run-1",
                              expires=today + timedelta(days=10), actor="@f", today=today)
    warn = report_ingest(suite=suite, body=body([measurement(FLAKY, fails=5)]), actor="ci")
    assert (warn.upload.status, warn.upload.reason, warn.upload.exit_code) == (
        "WARN", "quarantined", 0)
    entry.expires = today - timedelta(days=1)
    entry.save()
    failed = report_ingest(suite=suite, body=body([measurement(FLAKY, fails=0, n=500)]),
                           actor="ci")
    assert [m["reason"] for m in failed.rows] == ["quarantine_expired"]
    assert failed.upload.exit_code == 1


def test_empty_report_is_no_evidence(suite):
    outcome = report_ingest(suite=suite, body=b"[]", actor="ci")
    assert (outcome.upload.status, outcome.upload.reason, outcome.upload.exit_code) == (
        "FAIL", "no_evidence", 1)


def test_tier_violation_entry_fails_the_node(suite, today):
    report_ingest(suite=suite, body=body(many()), actor="ci")
    quarantine_create(suite=suite, nodeid=FLAKY, owner="@f", evidence="ci/run-1",
                      expires=today + timedelta(days=10), actor="@f", today=today)
    tier_rule_add(suite=suite, glob="tests/test_ingest.py::*", tier=1, actor="@lea")
    outcome = report_ingest(suite=suite, body=body([measurement(FLAKY, fails=5)]), actor="ci")
    assert [m["reason"] for m in outcome.rows] == ["tier_violation"]


def test_dry_run_stores_nothing(suite):
    outcome = report_ingest(suite=suite, body=body(many()), actor="ci", dry_run=True)
    assert outcome.dry_run and outcome.upload.status == "OK"
    assert not Report.objects.exists() and not Node.objects.exists()
    assert not ReasonRollup.objects.exists()


def test_rejected_upload_stores_nothing_and_names_row_and_field(suite):
    rows = [*many(3), {"nodeid": "x", "n": 10, "fails": 11}]
    with pytest.raises(UploadInvalid) as caught:
        report_ingest(suite=suite, body=body(rows), actor="ci")
    problem = caught.value.problems[0]
    assert (problem.row, problem.field, problem.code) == (3, "fails", "out_of_range")
    assert "row 3" in caught.value.message and "'fails'" in caught.value.message
    assert not Report.objects.exists() and not Node.objects.exists()


def test_signals_arbitrate_and_aggregate(suite):
    records = [record("a::x"), record("a::y", lock="drifted"), record("a::z", prop="fail")]
    outcome = signals_ingest(suite=suite, body=body({"records": records, "patch": "p1"}),
                             actor="ci")
    batch = outcome.upload
    assert (batch.verdict, batch.reason, batch.exit_code) == ("reject", "property_fail", 1)
    assert batch.reason_counts == {"clean": 1, "fixture_drifted": 1, "property_fail": 1}
    assert list(NodeVerdict.objects.values_list("reason", flat=True)) == [
        "clean", "fixture_drifted", "property_fail"]


def test_empty_batch_holds(suite):
    outcome = signals_ingest(suite=suite, body=b"[]", actor="ci")
    assert (outcome.upload.verdict, outcome.upload.reason, outcome.upload.exit_code) == (
        "hold", "no_evidence", 2)


def test_fixture_pin_overrides_the_claim(suite):
    suite.fixture_manifest, suite.fixture_seed = "sha256:feed", 7
    suite.save()
    records = [record("a::x", fixture_manifest="sha256:feed", seed=7),
               record("a::y", fixture_manifest="sha256:01d", seed=7),
               record("a::z", fixture_manifest=None)]
    outcome = signals_ingest(suite=suite, body=body(records), actor="ci")
    assert [v["reason"] for v in outcome.rows] == ["clean", "fixture_drifted", "fixture_missing"]


def test_a_stated_tier_is_kept_and_never_sticks(suite):
    signals_ingest(suite=suite, body=body([record("a::x", tier=1)]), actor="ci")
    node = Node.objects.get(nodeid="a::x")
    assert (node.tier, node.stated_tier) == (2, 1)
    signals_ingest(suite=suite, body=body([record("a::x", tier=2, prop="fail")]), actor="ci")
    node.refresh_from_db()
    assert (node.tier, node.stated_tier) == (2, 2)


def test_rollups_match_raw_rows_and_rebuild(suite):
    report_ingest(suite=suite, body=body([*many(5), measurement(FLAKY, fails=9)]), actor="ci")
    report_ingest(suite=suite, body=b"[]", actor="ci")
    signals_ingest(suite=suite, body=body([record("a::x", status="frozen")]), actor="ci")
    signals_ingest(suite=suite, body=b"[]", actor="ci")
    live = counts_from_rollups(suite)
    assert live == counts_from_raw(suite)
    assert sum(c for (src, _, r), c in live.items() if r == "no_evidence") == 2
    rebuild_rollups(suite)
    assert counts_from_rollups(suite) == live
    assert VerdictBatch.objects.count() == 2
