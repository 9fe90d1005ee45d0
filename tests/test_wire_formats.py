"""One set of wire models: an upload, an import row and the API's document take each value
with the same field types, so a bad value is refused by each path for the same reason,
with the same code and the same sentence; and the answers are exactly their models."""

from __future__ import annotations

import json
import math

import pytest
from pydantic import ValidationError

from flakeboard import rules
from ledger.wire import read_row
from runs.api.schemas import BatchAnswer, ReportAnswer
from runs.ingest import report_ingest, signals_ingest
from runs.results import batch_answer, report_answer
from runs.wire import MAX_ERRORS, UploadInvalid, parse_report, parse_signals
from tests.api_http import openapi_document, schema_validator
from tests.helpers import body, measurement, record

NODE = "tests/test_pay.py::test_refund_retry"
IMPORT_ROW = {"class": "flake", "n": 200, "fails": 5, "owner": "@finley",
              "expires": "2026-11-14", "evidence": "ci/run-1"}

# (field, bad value, code, whether a JSON Schema can tell). The upload's nodeid is the
# import's key; evidence is the upload envelope's and the import row's.
BAD = [
    ("nodeid", "", "invalid_nodeid", True),
    ("nodeid", "x" * (rules.NODEID_MAX_LENGTH + 1), "invalid_nodeid", True),
    ("nodeid", "tests/a.py::test_x\n", "invalid_nodeid", False),
    ("nodeid", "tests/a.py::test_\x85", "invalid_nodeid", False),
    ("nodeid", "tests/test_\ud800.py::test_x", "invalid_unicode", False),
    ("n", 0, "out_of_range", True),
    ("n", rules.COUNT_MAX + 1, "out_of_range", True),
    ("n", True, "wrong_type", True),
    ("n", "200", "wrong_type", True),
    ("n", 200.0, "wrong_type", False),  # JSON Schema counts 200.0 as an integer
    ("fails", -1, "out_of_range", True),
    ("fails", 201, "out_of_range", False),  # over n: across two fields
    ("fails", False, "wrong_type", True),
    ("fails", 2.5, "wrong_type", True),
    ("upper95", 1.5, "out_of_range", True),
    ("upper95", -0.01, "out_of_range", True),
    ("upper95", 10**400, "out_of_range", True),
    ("upper95", math.nan, "not_finite", False),  # not JSON, but what json.loads reads
    ("upper95", math.inf, "not_finite", False),
    ("upper95", "0.05", "wrong_type", True),
    ("upper95", True, "wrong_type", True),
    ("seed_base", rules.SEED_MAX + 1, "out_of_range", True),
    ("seed_base", rules.SEED_MIN - 1, "out_of_range", True),
    ("seed_base", True, "wrong_type", True),
    ("seed_base", "9137", "wrong_type", True),
    ("evidence", "e" * (rules.EVIDENCE_MAX_LENGTH + 1), "too_long", True),
    ("evidence", "ci/run-1\nrm -rf", "control_characters", False),
    ("evidence", "ci/\ud800", "invalid_unicode", False),
    ("evidence", 88213, "wrong_type", True),
]
IDS = [f"{field}={value!r:.20}" for field, value, _, _ in BAD]


def upload_body(field, value) -> dict:
    if field == "evidence":
        return {"measurements": [measurement(NODE)], "evidence": value}
    return {"measurements": [{**measurement(NODE), field: value}]}


def by_upload(field, value):
    with pytest.raises(UploadInvalid) as refused:
        parse_report(body(upload_body(field, value)), {})
    return refused.value.problems


def by_import(field, value):
    if field == "nodeid":
        entry, problems = read_row(value, IMPORT_ROW)
    else:
        entry, problems = read_row(NODE, {**IMPORT_ROW, field: value})
    assert entry is None
    return problems


def report_schema():
    operation = openapi_document()["paths"]["/api/v1/suites/{suite}/reports"]["post"]
    return schema_validator(operation["requestBody"]["content"]["application/json"]["schema"])


@pytest.mark.parametrize(("field", "value", "code", "in_schema"), BAD, ids=IDS)
def test_the_upload_and_the_import_refuse_a_value_alike(field, value, code, in_schema):
    uploaded, imported = by_upload(field, value), by_import(field, value)
    assert [p.code for p in uploaded] == [code]
    assert [(p.code, p.message) for p in imported] == [(code, uploaded[0].message)]
    assert uploaded[0].field == field
    assert imported[0].field == ("node" if field == "nodeid" else field)
    assert uploaded[0].row == (None if field == "evidence" else 0)


@pytest.mark.parametrize(("field", "value", "code", "in_schema"),
                         [case for case in BAD if case[3]], ids=[
                             i for i, case in zip(IDS, BAD, strict=True) if case[3]])
def test_the_api_document_refuses_what_it_can_express(field, value, code, in_schema):
    assert not report_schema().is_valid(upload_body(field, value))


def test_the_good_values_pass_every_path():
    row = {**measurement(NODE, fails=5), "upper95": 0.0572, "seed_base": rules.SEED_MIN}
    envelope = {"measurements": [row], "evidence": "e" * rules.EVIDENCE_MAX_LENGTH}
    assert report_schema().is_valid(envelope)
    parsed = parse_report(body(envelope), {})
    entry, problems = read_row(NODE, {**IMPORT_ROW, "upper95": 0.0572,
                                      "seed_base": rules.SEED_MIN})
    assert problems == []
    assert (entry.node, entry.n, entry.fails, entry.upper95, entry.seed_base) == (
        parsed.measurements[0].nodeid, 200, 5, 0.0572, rules.SEED_MIN)


@pytest.mark.parametrize("value", ["20261114", "2026-11-31", "2026-11-14 ", "next week",
                                   20261114, True, "\uff12\uff10\uff12\uff16-11-14"])
def test_a_date_is_written_yyyy_mm_dd_everywhere(value):
    with pytest.raises(UploadInvalid) as refused:
        parse_signals(body([record(NODE, freeze_expires=value)]), {})
    assert [(p.code, p.field) for p in refused.value.problems] == [
        ("invalid_date", "freeze_expires")]
    _, problems = read_row(NODE, {**IMPORT_ROW, "expires": value})
    assert [(p.code, p.field) for p in problems] == [("invalid_date", "expires")]


@pytest.mark.parametrize(("moment", "day"), [
    ("2026-11-14", "2026-11-14"),
    ("2026-11-14T23:30:00-02:00", "2026-11-15"),
    ("2026-11-14 12:00:00Z", "2026-11-14"),
])
def test_a_freeze_expiry_is_a_date_or_a_datetime_taken_as_its_utc_day(moment, day):
    parsed = parse_signals(body([record(NODE, freeze_expires=moment)]), {})
    assert parsed.records[0].freeze_expires.isoformat() == day


def test_a_bare_list_and_its_envelope_are_one_model():
    rows = [measurement("a::x"), measurement("a::y", n=10, fails=11)]
    with pytest.raises(UploadInvalid) as bare:
        parse_report(body(rows), {"commit": "c" * 201})
    with pytest.raises(UploadInvalid) as envelope:
        parse_report(body({"measurements": rows, "commit": "c" * 201}), {})
    expected = [(None, "commit", "too_long"), (1, "fails", "out_of_range")]
    for refused in (bare, envelope):
        assert [(p.row, p.field, p.code) for p in refused.value.problems] == expected


def test_at_most_max_errors_are_listed_and_all_are_counted():
    rows = [measurement(f"a::{i}", n=0) for i in range(MAX_ERRORS + 10)]
    with pytest.raises(UploadInvalid) as refused:
        parse_report(body(rows), {})
    assert len(refused.value.problems) == MAX_ERRORS
    assert refused.value.message.endswith(f"(and {MAX_ERRORS + 9} more problems)")


def test_a_node_twice_is_refused_at_each_repeat():
    rows = [measurement("a::x"), measurement("a::y"), measurement("a::x"), measurement("a::x")]
    with pytest.raises(UploadInvalid) as refused:
        parse_report(body(rows), {})
    assert [(p.row, p.field, p.code) for p in refused.value.problems] == [
        (2, "nodeid", "duplicate_node"), (3, "nodeid", "duplicate_node")]


def _round_trip(model, answer: dict) -> None:
    """The answer is its model's to the letter: validated, then dumped, it is unchanged,
    and a key the model does not describe is refused."""
    sent = json.loads(json.dumps(answer))
    assert model.model_validate(answer).model_dump(mode="json", by_alias=True) == sent
    with pytest.raises(ValidationError):
        model.model_validate({**answer, "undocumented": 1})


def test_the_answers_are_exactly_their_models(suite, today):
    suite.fixture_manifest, suite.fixture_seed = "sha256:feed", 7
    suite.save()
    rows = [measurement("a::x", fails=3, upper95=0.05, seed_base=9, tier=2), measurement("a::y")]
    _round_trip(ReportAnswer, report_answer(
        report_ingest(suite=suite, body=body({"measurements": rows, "selected_total": 40}),
                      actor="ci")))
    records = [record("a::x", freeze_expires=today.isoformat(), status="frozen", seed=7,
                      fixture_manifest="sha256:feed"), record("a::y", prop="fail")]
    _round_trip(BatchAnswer, batch_answer(
        signals_ingest(suite=suite, body=body(records), actor="ci", dry_run=True)))
