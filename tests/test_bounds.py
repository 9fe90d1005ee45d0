"""Every input path takes the same bounds, from one place (flakeboard.rules.limits): the
quarantine form, the report and signal uploads, and the ledger import accept a value at a
bound and refuse the first value past it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from flakeboard import rules
from ledger.ledger_file import import_ledger
from runs.ingest import report_ingest, signals_ingest
from runs.wire import UploadInvalid
from tests.helpers import body, measurement, record
from tests.world import module_world

NODE = "tests/test_pay.py::test_refund_retry"
LONG = rules.EVIDENCE_MAX_LENGTH


def add_wide(suite, today):
    rows = [measurement(f"tests/test_many.py::test_{i}") for i in range(40)]
    report_ingest(suite=suite, body=body(rows), actor="ci")
    return suite


# wide: the suite with 40 known nodes, so that one new entry stays under the 5% cap.
build_world, wide = module_world("wide", add_wide)


def by_form(client, suite, today, **fields) -> bool:
    data = {"node": NODE, "owner": "@finley", "expires": (today + timedelta(days=14)).isoformat(),
            "evidence": "ci/run-1", "note": "", "n": "200", "fails": "0", "upper95": "",
            "seed_base": ""}
    data.update({k: str(v) for k, v in fields.items()})
    response = client.post(reverse("entry_new", args=[suite.slug]), data)
    assert response.status_code in (200, 302)
    return response.status_code == 302


def by_upload(suite, **fields) -> bool:
    row = {**measurement(NODE), **{k: v for k, v in fields.items() if k != "evidence"}}
    envelope = {"measurements": [row], "evidence": fields.get("evidence", "ci/run-1")}
    try:
        report_ingest(suite=suite, body=body(envelope), actor="ci", dry_run=True)
    except UploadInvalid:
        return False
    return True


def by_signals(suite, seed) -> bool:
    try:
        signals_ingest(suite=suite, body=body([record(NODE, seed=seed)]), actor="ci",
                       dry_run=True)
    except UploadInvalid:
        return False
    return True


def by_import(suite, today, **fields) -> bool:
    row = {"class": "flake", "n": 200, "fails": 0, "owner": "@finley",
           "expires": (today + timedelta(days=5)).isoformat(), "evidence": "ci/run-1", **fields}
    outcome = import_ledger(suite=suite, pairs=[(NODE, row)], actor="@lea", today=today)
    return not outcome.refused


EDGES = [
    pytest.param("evidence", "e" * LONG, "e" * (LONG + 1), id="evidence-length"),
    pytest.param("n", rules.COUNT_MAX, rules.COUNT_MAX + 1, id="n"),
    pytest.param("seed_base", rules.SEED_MAX, rules.SEED_MAX + 1, id="seed-max"),
    pytest.param("seed_base", rules.SEED_MIN, rules.SEED_MIN - 1, id="seed-min"),
]


@pytest.mark.parametrize(("field", "at", "past"), EDGES)
def test_the_form_takes_the_shared_bounds(client_for, owner, wide, today, field, at, past):
    client = client_for(owner)
    assert not by_form(client, wide, today, **{field: past})
    assert by_form(client, wide, today, **{field: at})


@pytest.mark.parametrize(("field", "at", "past"), EDGES)
def test_uploads_take_the_shared_bounds(suite, field, at, past):
    assert by_upload(suite, **{field: at})
    assert not by_upload(suite, **{field: past})


@pytest.mark.parametrize(("at", "past"), [(rules.SEED_MAX, rules.SEED_MAX + 1),
                                          (rules.SEED_MIN, rules.SEED_MIN - 1)])
def test_signal_seeds_take_the_shared_bounds(suite, at, past):
    assert by_signals(suite, at)
    assert not by_signals(suite, past)


@pytest.mark.parametrize(("field", "at", "past"), EDGES)
def test_the_import_takes_the_shared_bounds(wide, today, field, at, past):
    assert not by_import(wide, today, **{field: past})
    assert by_import(wide, today, **{field: at})


@pytest.mark.parametrize("handle", ["fin\x80ley@example.com", "@fi\x85n", "f\x7fin@example.com"])
def test_a_control_character_is_refused_in_an_owner_as_in_evidence(
    client_for, owner, wide, today, handle
):
    assert rules.owner_problem(handle) is not None
    assert not by_form(client_for(owner), wide, today, owner=handle)
    assert not by_import(wide, today, owner=handle)
