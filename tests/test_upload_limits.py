"""What bounds an upload's work, and what the bounds admit: a row limit beside the byte limit,
no query with a parameter per row (a batch with more distinct nodes than SQLite's variable
limit lands), and rows written as plain tuples that read back as the service answered."""

from datetime import date, timedelta

import pytest
from django.test import override_settings

from ledger.models import Node, QuarantineEntry
from ledger.quarantine import quarantine_create
from runs.ingest import MEASUREMENT_COLUMNS, VERDICT_COLUMNS, report_ingest, signals_ingest
from runs.models import Measurement, NodeVerdict, Report, VerdictBatch
from runs.results import answer
from tests.helpers import body, measurement, record
from web.bulk import columns_of

SQLITE_VARIABLE_LIMIT = 32_766


@override_settings(UPLOAD_MAX_RECORDS=5)
@pytest.mark.parametrize("kind", ["reports", "verdicts"])
def test_one_row_over_the_row_limit_is_413_naming_both_limits(board, suite, token, kind):
    def rows(count):
        if kind == "reports":
            return [measurement(f"t.py::t{i}") for i in range(count)]
        return [record(f"t.py::t{i}") for i in range(count)]

    send = board.report if kind == "reports" else board.verdicts
    refused = send(suite.slug, token, body(rows(6)))
    assert refused.status == 413
    assert refused.json["error"] == "too_many_records"
    message = refused.json["message"]
    assert "6 " in message and "limit of 5" in message
    assert "UPLOAD_MAX_RECORDS" in message and "UPLOAD_MAX_BYTES" in message
    assert refused.json["details"][0]["code"] == "too_many_records"
    assert not (Report.objects.exists() or VerdictBatch.objects.exists()
                or Node.objects.exists())

    assert send(suite.slug, token, body(rows(5))).status == 201


def test_the_plain_inserts_name_every_column():
    for model, columns in ((Measurement, MEASUREMENT_COLUMNS), (NodeVerdict, VERDICT_COLUMNS)):
        assert len(columns_of(model, columns)) == len(columns)
        with pytest.raises(ValueError, match="missing"):
            columns_of(model, columns[:-1])


@pytest.fixture
def held(suite, today):
    """Two quarantined nodes (imported, so before any upload), one past its expiry."""
    for nodeid, days in (("t.py::held", 10), ("t.py::lapsed", -1)):
        quarantine_create(suite=suite, nodeid=nodeid, owner="@finley", evidence="ci/run-1",
                          expires=today + timedelta(days=days), actor="@finley", today=today,
                          imported=True)


def test_a_duplicate_answers_exactly_what_the_upload_answered(suite, held):
    rows = [measurement("t.py::held", fails=9), measurement("t.py::lapsed", fails=1),
            measurement("t.py::ok", upper95=0.5), measurement("t.py::few", n=10)]
    first = answer(report_ingest(suite=suite, body=body(rows), actor="ci"))
    again = answer(report_ingest(suite=suite, body=body(rows), actor="ci"))
    assert again.pop("duplicate") and not first.pop("duplicate")
    assert (again.pop("repeats_attempt"), first.pop("repeats_attempt")) == (1, None)
    assert again == first
    assert [m["entry"]["state"] if m["entry"] else None for m in first["measurements"]] == [
        "active", "expired", None, None]
    assert first["measurements"][2]["flags"] == ["upper95_mismatch"]

    records = [record("t.py::held", status="frozen", freeze_expires="2099-01-01"),
               record("t.py::ok", prop="fail")]
    first = answer(signals_ingest(suite=suite, body=body(records), actor="ci"))
    again = answer(signals_ingest(suite=suite, body=body(records), actor="ci"))
    assert again.pop("duplicate") and not first.pop("duplicate")
    assert (again.pop("repeats_attempt"), first.pop("repeats_attempt")) == (1, None)
    assert again == first
    stored = NodeVerdict.objects.get(node__nodeid="t.py::held")
    assert stored.freeze_expires == date(2099, 1, 1) and stored.entry_state == "active"


@pytest.mark.slow
def test_more_distinct_nodes_than_sqlites_variable_limit_land(suite, held):
    count = SQLITE_VARIABLE_LIMIT + 1000
    ids = ["t.py::held", "t.py::lapsed", *(f"tests/test_{i // 100}.py::test_{i}"
                                           for i in range(count))]
    records = [record(nodeid) for nodeid in ids]

    first = signals_ingest(suite=suite, body=body(records), actor="ci")
    assert first.upload.record_count == len(ids)
    # Again the next upload, now of known nodes, found in one read of the suite's nodes.
    again = signals_ingest(suite=suite, body=body({"records": records, "patch": "p2"}),
                           actor="ci")
    assert Node.objects.filter(suite=suite).count() == len(ids)
    assert NodeVerdict.objects.filter(batch=again.upload).count() == len(ids)
    held_rows = {r["node"]: r["entry"]["state"] for r in again.rows if r["entry"]}
    assert held_rows == {"t.py::held": "active", "t.py::lapsed": "expired"}
    entries = set(QuarantineEntry.objects.values_list("pk", flat=True))
    assert set(NodeVerdict.objects.filter(batch=again.upload, entry__isnull=False)
               .values_list("entry_id", flat=True)) == entries

    reports = report_ingest(suite=suite, body=body([measurement(i) for i in ids]), actor="ci")
    assert reports.upload.measurement_count == len(ids)
    assert reports.upload.test_set_size == len(ids)
