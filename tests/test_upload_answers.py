"""The upload answers' rows are written without going through their models
(``runs.api.uploads.answered``): what is sent must be exactly what the answer's schema
makes of it, so every row is in the schema's shape already, for every kind of row: with and
without an entry, with flags, stored, a dry run and a duplicate."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client

from ledger.quarantine import quarantine_create
from runs.api.schemas import BatchAnswer, ReportAnswer
from tests.helpers import body, measurement, node_page, record

QUARANTINED = "tests/test_pay.py::test_refund[ü-ß]"


@pytest.fixture
def send(suite, token):
    client = Client()

    def post(kind: str, payload, **query):
        path = f"/api/v1/suites/{suite.slug}/{kind}"
        if query:
            path += "?" + "&".join(f"{k}={v}" for k, v in query.items())
        return client.post(path, body(payload), content_type="application/json",
                           headers={"Authorization": f"Bearer {token}"})

    return post


@pytest.fixture
def entry(suite, today):
    suite.max_quarantined_share = 1.0
    suite.save()
    return quarantine_create(suite=suite, nodeid=QUARANTINED, owner="@finley",
                             evidence="ci/run-9", expires=today + timedelta(days=3),
                             actor="@finley", today=today)


def assert_canonical(response, schema) -> dict:
    sent = json.loads(response.content)
    assert schema.model_validate(sent).model_dump(mode="json") == sent
    return sent


def reports():
    rows = [measurement(QUARANTINED, fails=9), measurement("t.py::ok"),
            measurement("t.py::warn", n=30, fails=0),
            measurement("t.py::fail", fails=20, upper95=0.01)]
    return {"measurements": rows, "commit": "c0ffee"}


def batches(today):
    freeze = (today + timedelta(days=2)).isoformat()
    return {"records": [
        record(QUARANTINED, "fail"), record("t.py::a"), record("t.py::b", "not_run", "drifted"),
        record("t.py::c", status="frozen", freeze_expires=freeze),
        record("t.py::d", fixture_manifest="sha256:ab", seed=7, tier=1),
    ], "patch": "p-1"}


@pytest.mark.parametrize(("kind", "schema"), [("reports", ReportAnswer),
                                              ("verdicts", BatchAnswer)])
def test_every_answer_is_what_its_schema_makes_of_it(send, entry, today, kind, schema):
    payload = reports() if kind == "reports" else batches(today)
    rows_key = "measurements" if kind == "reports" else "records"
    dry = assert_canonical(send(kind, payload, dry_run="true"), schema)
    stored = send(kind, payload)
    assert stored.status_code == 201 and stored["Location"] == stored.json()["url"]
    first = assert_canonical(stored, schema)
    again = assert_canonical(send(kind, payload), schema)
    assert (dry["dry_run"], first["duplicate"], again["duplicate"]) == (True, False, True)
    assert dry[rows_key] == first[rows_key] == again[rows_key]
    with_entry = [row for row in first[rows_key] if row["entry"]]
    assert [row["entry"]["id"] for row in with_entry] == [entry.pk]
    assert any(row["flags"] for row in first[rows_key])
    assert stored["Flakeboard-Exit-Code"] == str(first["exit_code"])
    node_field, passing = ("nodeid", "OK") if kind == "reports" else ("node", "accept")
    for row in first[rows_key]:
        passed = row["status" if kind == "reports" else "verdict"] == passing
        expected = None if passed else "http://testserver" + node_page("acme", row[node_field])
        assert row["url"] == expected
    assert {row["url"] is None for row in first[rows_key]} == {True, False}
