"""Metrics (issue 22): ``GET /metrics`` in Prometheus' text format. Off (404) unless
METRICS_TOKEN is set, then only with that bearer token (401 otherwise); uploads by kind and
outcome, ingest durations, each suite's ledger size and gate status, the 5xx count."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client, override_settings
from django.urls import reverse
from prometheus_client.parser import text_string_to_metric_families

from ledger.quarantine import quarantine_create
from ledger.refusals import UploadInvalid
from runs.ingest import report_ingest
from tests.helpers import body, measurement
from web.metrics import REGISTRY

SECRET = "metrics-secret-1234"
ON = override_settings(METRICS_TOKEN=SECRET)


def scrape(token: str | None = SECRET):
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return Client().get(reverse("metrics"), headers=headers)


def samples(name: str) -> dict[tuple, float]:
    families = text_string_to_metric_families(scrape().content.decode())
    return {
        tuple(sorted(sample.labels.items())): sample.value
        for family in families for sample in family.samples if sample.name == name
    }


def uploads(kind: str, outcome: str) -> float:
    return REGISTRY.get_sample_value(
        "flakeboard_uploads_total", {"kind": kind, "outcome": outcome}
    ) or 0.0


def test_off_without_a_token(db):
    assert scrape().status_code == 404


@ON
@pytest.mark.parametrize("token", [None, "", "wrong", SECRET + "x", SECRET[:-1]])
def test_a_wrong_or_missing_token_is_401(db, token):
    response = scrape(token)
    assert response.status_code == 401 and "Bearer" in response["WWW-Authenticate"]


@ON
def test_the_right_token_gets_the_text_format(suite):
    response = scrape()
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    text = response.content.decode()
    for name in ["flakeboard_uploads_total", "flakeboard_ingest_duration_seconds",
                 "flakeboard_http_server_errors_total", "flakeboard_ledger_entries",
                 "flakeboard_gate_passing", "flakeboard_replica_fallbacks_total"]:
        assert f"# TYPE {name.removesuffix('_total')}" in text


@ON
def test_an_upload_is_counted_by_kind_and_outcome(suite):
    accepted, refused = uploads("report", "accepted"), uploads("report", "refused")
    report_ingest(suite=suite, body=body([measurement("tests/test_a.py::test_a")]), actor="ci")
    with pytest.raises(UploadInvalid):
        report_ingest(suite=suite, body=b"not json", actor="ci")
    assert uploads("report", "accepted") == accepted + 1
    assert uploads("report", "refused") == refused + 1
    count = samples("flakeboard_ingest_duration_seconds_count")
    assert count[(("kind", "report"),)] >= 2


@ON
def test_an_upload_through_the_api_is_counted(suite, token):
    before = uploads("report", "accepted")
    response = Client().post(
        reverse("api:reports", kwargs={"suite": suite.slug}),
        body([measurement("tests/test_a.py::test_a")]), content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 201
    assert uploads("report", "accepted") == before + 1


@ON
def test_ledger_size_and_gate_status_per_suite(suite, other_suite, today):
    rows = [measurement(f"tests/test_many.py::test_{i}") for i in range(40)]
    report_ingest(suite=suite, body=body(rows), actor="ci")
    quarantine_create(suite=suite, nodeid="tests/test_many.py::test_1", owner="@finley",
                      evidence="ci/run-1", expires=today + timedelta(days=20), actor="@finley",
                      today=today)
    entries = samples("flakeboard_ledger_entries")
    assert entries[(("state", "active"), ("suite", "acme"))] == 1
    assert entries[(("state", "expired"), ("suite", "acme"))] == 0
    assert entries[(("state", "active"), ("suite", "other"))] == 0
    passing = samples("flakeboard_gate_passing")
    assert passing == {(("suite", "acme"),): 1, (("suite", "other"),): 1}


@ON
def test_an_expired_entry_fails_the_gate_gauge(suite, today):
    report_ingest(suite=suite, body=body([measurement(f"tests/t.py::test_{i}")
                                          for i in range(40)]), actor="ci")
    entry = quarantine_create(suite=suite, nodeid="tests/t.py::test_1", owner="@finley",
                              evidence="ci/run-1", expires=today + timedelta(days=5),
                              actor="@finley", today=today)
    type(entry).objects.filter(pk=entry.pk).update(expires=today - timedelta(days=1))
    assert samples("flakeboard_gate_passing") == {(("suite", "acme"),): 0}


@ON
def test_a_5xx_is_counted(db, monkeypatch):
    from ledger.views import home

    def broken(*args):
        raise RuntimeError("boom")

    before = REGISTRY.get_sample_value("flakeboard_http_server_errors_total")
    with monkeypatch.context() as patch:
        patch.setattr(home.connection, "cursor", broken)
        response = Client().get(reverse("healthz"))
    assert response.status_code == 503  # a 5xx answer, even a handled one
    assert REGISTRY.get_sample_value("flakeboard_http_server_errors_total") == before + 1
