"""A flake report row's diagnosis experiments (SPEC 2.4d, docs/diagnosis.md): the seed
replay and the runs under CPU load the client's measure command ran on a flaky or suspect
test. The upload takes them per row, a closed vocabulary checked whole (an error names the
row and the field); the board stores them with the measurement, through every path that
stores one, and diagnoses the node from the latest."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from board.diagnosis import node_diagnosis
from flakeboard import rules
from runs.ingest import report_ingest
from runs.models import Measurement
from runs.wire import parse_report
from tests.api_http import openapi_document, schema_validator
from tests.helpers import assert_row_refused, body, measurement

NODE = "tests/test_x.py::test_y"
SEEDED = {"seeds": [9141, 9150], "controls": [9137, 9138], "seed_runs": 4, "seed_fails": 4,
          "control_runs": 4, "control_fails": 0,
          "command": f"python3 flakeboard_ci.py replay '{NODE}' --seed 9141"}
LOAD = {"idle_n": 100, "idle_fails": 2, "load_n": 100, "load_fails": 31,
        "command": f"python3 flakeboard_ci.py replay '{NODE}' --stress --runs 100"}
EXPERIMENTS = {"seeded": SEEDED, "load": LOAD, "skipped": "budget"}


def row(experiments, nodeid: str = NODE) -> dict:
    return {**measurement(nodeid, n=100, fails=2, classification="flaky"),
            "experiments": experiments}


# --- the wire --------------------------------------------------------------------------------


@pytest.mark.parametrize("experiments", [
    EXPERIMENTS, {"seeded": SEEDED}, {"load": LOAD}, {"skipped": "disabled"}, {},
    {"seeded": {**SEEDED, "command": None}}, {"load": {k: v for k, v in LOAD.items()
                                                      if k != "command"}},
    {"seeded": {**SEEDED, "seeds": list(range(10)), "controls": list(range(10, 20))}},
    {"load": {"idle_n": 0, "idle_fails": 0, "load_n": 0, "load_fails": 0}},
], ids=["all", "seeded", "load", "disabled", "none ran", "no command", "command left out",
        "ten seeds", "no runs"])
def test_the_upload_takes_them(experiments):
    parsed = parse_report(body([row(experiments)]), {})
    stored = parsed.measurements[0].experiments.stored()
    assert rules.Experiments.from_wire(stored) == rules.Experiments.from_wire(
        {**experiments, **{key: {"command": None, **value} for key, value in experiments.items()
                           if isinstance(value, dict)}})


def test_left_out_they_are_none():
    assert parse_report(body([measurement(NODE)]), {}).measurements[0].experiments is None


REFUSED = {
    "an unknown experiment": (
        {"memory": {"n": 1}}, "invalid_value", "memory is not a field here"),
    "an unknown key in one": (
        {"seeded": {**SEEDED, "runs": 4}}, "invalid_value", "seeded.runs is not a field here"),
    "an unknown key in load": (
        {"load": {**LOAD, "cores": 2}}, "invalid_value", "load.cores is not a field here"),
    "an unknown skip": (
        {"skipped": "timeout"}, "invalid_value", "skipped must be 'budget' or 'disabled'"),
    "not an object": ("seeded", "wrong_type", "must be an object (got a string)"),
    "a negative count": (
        {"load": {**LOAD, "load_n": -1}}, "out_of_range", "load.load_n must be at least 0"),
    "a count that is no whole number": (
        {"seeded": {**SEEDED, "seed_runs": 4.0}}, "wrong_type",
        "seeded.seed_runs must be a whole number"),
    "a count that is a boolean": (
        {"load": {**LOAD, "idle_n": True}}, "wrong_type", "load.idle_n must be a whole number"),
    "no seed": (
        {"seeded": {**SEEDED, "seeds": [], "controls": []}}, "out_of_range",
        "seeded.seeds must name 1 to 10 seeds (got 0)"),
    "eleven seeds": (
        {"seeded": {**SEEDED, "seeds": list(range(11)), "controls": list(range(11))}},
        "out_of_range", "seeded.seeds must name 1 to 10 seeds (got 11)"),
    "fewer controls than seeds": (
        {"seeded": {**SEEDED, "controls": [9137]}}, "invalid_value",
        "seeded.controls must name as many seeds as seeds (2; got 1)"),
    "a seed out of range": (
        {"seeded": {**SEEDED, "seeds": [2**63, 1]}}, "out_of_range", "seeded.seeds.0 must be "
                                                                   "at most"),
    "a seed that is a string": (
        {"seeded": {**SEEDED, "controls": ["9137", 9138]}}, "wrong_type",
        "seeded.controls.0 must be a whole number"),
    "a missing count": (
        {"load": {k: v for k, v in LOAD.items() if k != "load_n"}}, "missing_field",
        "load.load_n is required"),
    "a command too long": (
        {"load": {**LOAD, "command": "x" * 1001}}, "too_long", "load.command"),
    "a command with control characters": (
        {"seeded": {**SEEDED, "command": "replay\x1b[2J"}}, "control_characters",
        "seeded.command"),
    "a command that is no string": (
        {"seeded": {**SEEDED, "command": ["replay"]}}, "wrong_type",
        "seeded.command must be a string"),
}


@pytest.mark.parametrize(("experiments", "code", "says"), REFUSED.values(), ids=REFUSED.keys())
def test_each_refusal_names_the_row_and_the_field(suite, experiments, code, says):
    rows = [measurement("tests/a.py::test_ok"), row(experiments)]
    assert_row_refused(suite, rows, "experiments", code, says)


# Each experiment's count of failures, and the count of runs it may not exceed.
FAILS_OF_RUNS = [("seeded", "seed_fails", "seed_runs"), ("seeded", "control_fails", "control_runs"),
                 ("load", "load_fails", "load_n"), ("load", "idle_fails", "idle_n")]


@pytest.mark.parametrize(("experiment", "fails", "runs"), FAILS_OF_RUNS)
def test_fails_may_not_exceed_their_runs(suite, experiment, fails, runs):
    given = EXPERIMENTS[experiment]
    too_many = given[runs] + 1
    rows = [measurement("tests/a.py::test_ok"), row({experiment: {**given, fails: too_many}})]
    assert_row_refused(suite, rows, "experiments", "out_of_range",
                       f"{experiment}.{fails} must not exceed {runs} ({given[runs]}; "
                       f"got {too_many})")


def test_the_api_document_describes_them():
    schemas = openapi_document()["components"]["schemas"]
    assert set(schemas["ExperimentsIn"]["properties"]) == {"seeded", "load", "skipped"}
    assert "--diagnose-budget" in str(schemas["ExperimentsIn"])
    upload = openapi_document()["paths"]["/api/v1/suites/{suite}/reports"]["post"]
    request = schema_validator(upload["requestBody"]["content"]["application/json"]["schema"])
    assert request.is_valid([row(EXPERIMENTS)])
    assert not request.is_valid([row({"seeded": {**SEEDED, "bogus": 1}})])


# --- stored, by every path -------------------------------------------------------------------


def test_stored_with_the_measurement(suite):
    report_ingest(suite=suite, actor="ci", body=body([
        row(EXPERIMENTS), measurement("tests/test_x.py::test_plain")]))
    stored = dict(Measurement.objects.values_list("node__nodeid", "experiments"))
    assert stored == {NODE: EXPERIMENTS, "tests/test_x.py::test_plain": None}


def test_a_dry_run_stores_nothing(suite):
    report_ingest(suite=suite, actor="ci", body=body([row(EXPERIMENTS)]), dry_run=True)
    assert not Measurement.objects.exists()


def test_the_import_command_keeps_them_and_refuses_bad_ones(suite, tmp_path):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    bad.write_bytes(body([row({"load": {**LOAD, "stress": "cpu"}})]))
    with pytest.raises(CommandError, match=r"row 0, field 'experiments': load.stress is not"):
        call_command("ingest_report", suite.slug, str(bad), stdout=StringIO())
    assert not Measurement.objects.exists()
    good.write_bytes(body([row({"load": LOAD})]))
    with pytest.raises(SystemExit):  # 2 failures of 100 are over the default budget
        call_command("ingest_report", suite.slug, str(good), stdout=StringIO())
    assert Measurement.objects.get().experiments == {"load": LOAD}


def test_the_latest_measurements_experiments_diagnose_the_node(suite, today):
    report_ingest(suite=suite, actor="ci", body=body([row({"seeded": SEEDED})]))
    diagnosis = node_diagnosis(suite, NODE, today=today)
    assert (diagnosis.category, diagnosis.command) == (rules.Category.SEEDED,
                                                        SEEDED["command"])
    report_ingest(suite=suite, actor="ci", body=body([row({"load": LOAD})]))
    diagnosis = node_diagnosis(suite, NODE, today=today)
    assert (diagnosis.category, diagnosis.command) == (rules.Category.TIMING, LOAD["command"])
