"""POST /api/v1/suites/{suite}/reports: flake-report.json in, the budget gate's answer out."""

from datetime import timedelta

import pytest
from django.test import override_settings

from ledger.models import Node
from ledger.quarantine import quarantine_create
from runs.models import Measurement, ReasonRollup, Report
from tests.helpers import body, measurement

FLAKY = "tests/test_ingest.py::test_stream_backpressure"


def known(k=40):
    """A healthy test set, so that one quarantine stays under the 5% cap."""
    return [measurement(f"tests/test_many.py::test_{i}") for i in range(k)]


def quarantine(suite, nodeid, today, days=10):
    return quarantine_create(suite=suite, nodeid=nodeid, owner="@finley", evidence="ci/run-1",
                             expires=today + timedelta(days=days), actor="@finley",
                             today=today, imported=days < 0)


def nothing_stored():
    return not (Report.objects.exists() or Measurement.objects.exists()
                or Node.objects.exists() or ReasonRollup.objects.exists())


def test_the_seeds_bare_list_is_gated_per_node(board, suite, token):
    rows = [measurement("tests/a.py::test_ok", n=200, fails=0, upper95=0.0188, seed_base=9137),
            measurement(FLAKY, n=200, fails=5, upper95=0.0537, seed_base=9137),
            measurement("tests/a.py::test_short", n=30, fails=0)]
    answer = board.report(suite.slug, token, body(rows),
                          query={"commit": "abc123", "branch": "main", "evidence": "ci/run-7"})

    assert answer.status == 201
    result = answer.json
    report = Report.objects.get()
    assert result["id"] == report.pk
    assert result["url"] == f"{board.url}/suites/acme/reports/{report.pk}/"
    assert answer.headers["Location"] == result["url"]
    assert answer.headers["Flakeboard-Exit-Code"] == "1"
    assert (result["status"], result["reason"], result["exit_code"]) == ("FAIL", "over_budget", 1)
    assert [(m["nodeid"], m["status"], m["reason"]) for m in result["measurements"]] == [
        ("tests/a.py::test_ok", "OK", "within_budget"),
        (FLAKY, "FAIL", "over_budget"),
        ("tests/a.py::test_short", "FAIL", "too_few_runs"),
    ]
    flaky = result["measurements"][1]
    assert (flaky["upper95"], flaky["reported_upper95"]) == (0.0572, 0.0537)
    assert flaky["flags"] == ["upper95_mismatch"]
    assert result["measurements"][0]["flags"] == []
    assert result["counts"] == {"measurements": 3, "fail": 2, "warn": 0, "ok": 1}
    assert (report.commit, report.branch, report.evidence) == ("abc123", "main", "ci/run-7")
    assert report.uploaded_by.startswith("token fbw_")
    assert not result["duplicate"] and not result["dry_run"]


def test_the_envelope_carries_metadata_and_the_selected_total(board, suite, token):
    envelope = {"measurements": known(3), "commit": "c1", "branch": "b1",
                "evidence": "https://ci.example.com/run/1", "selected_total": 120}
    result = board.report(suite.slug, token, body(envelope)).json
    assert (result["status"], result["exit_code"]) == ("OK", 0)
    # The board's own test set sizes the share; the stated selection is said beside it.
    assert result["share"] == {"quarantined": 0, "test_set_size": 3, "share": 0.0,
                               "cap": 0.05, "over_cap": False, "size_source": "known_nodes",
                               "size_commit": None, "selected_total": 120}
    assert Report.objects.get().evidence == "https://ci.example.com/run/1"


def test_a_quarantined_node_warns_and_passes(board, suite, token, today):
    board.report(suite.slug, token, body(known()))
    quarantine(suite, FLAKY, today)
    answer = board.report(suite.slug, token, body([measurement(FLAKY, fails=5)]))
    result = answer.json
    assert (result["status"], result["reason"], result["exit_code"]) == (
        "WARN", "quarantined", 0)
    entry = result["measurements"][0]["entry"]
    assert (entry["owner"], entry["expires"], entry["state"]) == (
        "@finley", (today + timedelta(days=10)).isoformat(), "active")
    assert result["share"]["quarantined"] == 1 and not result["share"]["over_cap"]
    assert answer.headers["Flakeboard-Exit-Code"] == "0"


def test_a_node_with_an_expired_entry_fails_quarantine_expired(board, suite, token, today):
    board.report(suite.slug, token, body(known()))
    quarantine(suite, FLAKY, today, days=-3)
    result = board.report(suite.slug, token, body([measurement(FLAKY, n=1000, fails=0)])).json
    assert [(m["status"], m["reason"]) for m in result["measurements"]] == [
        ("FAIL", "quarantine_expired")]
    assert (result["status"], result["exit_code"]) == ("FAIL", 1)


def test_an_empty_report_is_no_evidence_and_fails(board, suite, token):
    answer = board.report(suite.slug, token, b"[]")
    result = answer.json
    assert (result["status"], result["reason"], result["exit_code"]) == (
        "FAIL", "no_evidence", 1)
    assert result["measurements"] == [] and answer.headers["Flakeboard-Exit-Code"] == "1"


def test_a_share_over_the_cap_fails_the_report(board, suite, token, today):
    board.report(suite.slug, token, body(known()))
    quarantine(suite, FLAKY, today)
    suite.max_quarantined_share = 0.02
    suite.save()
    result = board.report(suite.slug, token, body(known(2))).json
    assert (result["status"], result["reason"], result["exit_code"]) == (
        "FAIL", "quarantine_cap_exceeded", 1)
    assert result["share"] == {"quarantined": 1, "test_set_size": 41, "share": 0.02439,
                               "cap": 0.02, "over_cap": True, "size_source": "known_nodes",
                               "size_commit": None, "selected_total": None}


def test_the_gate_reads_the_ledger_as_it_is_at_upload(board, suite, token, today):
    board.report(suite.slug, token, body(known()))
    rows = body([measurement(FLAKY, fails=5)])
    before = board.report(suite.slug, token, rows, query={"commit": "1"}).json
    quarantine(suite, FLAKY, today)
    after = board.report(suite.slug, token, rows, query={"commit": "2"}).json
    assert (before["reason"], after["reason"]) == ("over_budget", "quarantined")


def test_the_same_body_twice_is_stored_once(board, suite, token):
    payload = body(known(5))
    first = board.report(suite.slug, token, payload, query={"commit": "abc"})
    second = board.report(suite.slug, token, payload, query={"commit": "abc"})
    assert (first.status, second.status) == (201, 200)
    assert (first.json["duplicate"], second.json["duplicate"]) == (False, True)
    assert (first.json["repeats_attempt"], second.json["repeats_attempt"]) == (None, 1)
    assert second.json["id"] == first.json["id"]
    flags = ("duplicate", "repeats_attempt")
    assert {k: v for k, v in second.json.items() if k not in flags} == {
        k: v for k, v in first.json.items() if k not in flags}
    assert Report.objects.count() == 1 and Measurement.objects.count() == 5
    other_commit = board.report(suite.slug, token, payload, query={"commit": "def"})
    assert other_commit.status == 201 and Report.objects.count() == 2


@pytest.mark.parametrize("flag", ["1", "true"])
def test_a_dry_run_evaluates_and_stores_nothing(board, suite, token, flag):
    answer = board.report(suite.slug, token, body([*known(3), measurement(FLAKY, fails=5)]),
                          query={"dry_run": flag})
    assert answer.status == 200
    result = answer.json
    assert result["dry_run"] and (result["id"], result["url"]) == (None, None)
    assert (result["reason"], result["exit_code"]) == ("over_budget", 1)
    assert answer.headers["Flakeboard-Exit-Code"] == "1"
    assert nothing_stored()


def test_a_body_over_the_limit_is_413(board, suite, token):
    payload = body(known(20))
    with override_settings(UPLOAD_MAX_BYTES=len(payload) - 1):
        answer = board.report(suite.slug, token, payload)
    assert (answer.status, answer.error) == (413, "too_large")
    assert str(len(payload) - 1) in answer.json["message"]
    assert nothing_stored()


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", None])
def test_a_body_not_sent_as_json_is_415(board, suite, token, content_type):
    answer = board.report(suite.slug, token, body(known(2)), content_type=content_type)
    assert (answer.status, answer.error) == (415, "unsupported_media_type")
    assert nothing_stored()


def test_json_with_a_charset_or_a_json_suffix_is_accepted(board, suite, token):
    for content_type in ("application/json; charset=utf-8", "application/vnd.ci+json"):
        answer = board.report(suite.slug, token, body(known(2)), content_type=content_type,
                              query={"commit": content_type})
        assert answer.status == 201


@pytest.mark.parametrize("raw", [b"", b"{not json", b"[1, 2", b"\xff\xfe\x00"])
def test_a_body_that_is_not_json_is_400(board, suite, token, raw):
    answer = board.report(suite.slug, token, raw)
    assert (answer.status, answer.error) == (400, "invalid_json")
    assert nothing_stored()


INVALID = [
    ([measurement("a::x"), measurement("a::y", n=10, fails=11)], 1, "fails", "out_of_range"),
    ([measurement("a::x", n=0)], 0, "n", "out_of_range"),
    ([measurement("a::x", fails=-1)], 0, "fails", "out_of_range"),
    ([measurement("a::x", n="200")], 0, "n", "wrong_type"),
    ([measurement("a::x", upper95=1.5)], 0, "upper95", "out_of_range"),
    ([measurement("a::x"), measurement("a::x")], 1, "nodeid", "duplicate_node"),
    ([measurement("")], 0, "nodeid", "invalid_nodeid"),
    ([measurement("a::x\n")], 0, "nodeid", "invalid_nodeid"),
    ([measurement("a" * 1001)], 0, "nodeid", "invalid_nodeid"),
    ([{"n": 200, "fails": 0}], 0, "nodeid", "missing_field"),
    ([measurement("a::x", tier=5)], 0, "tier", "invalid_value"),
    ([measurement("a::x", classification="flakey")], 0, "classification", "invalid_value"),
    ({"measurements": "nope"}, None, "measurements", "invalid_shape"),
    ({"measurements": [], "selected_total": 0}, None, "selected_total", "out_of_range"),
    ("a string", None, None, "invalid_shape"),
]


@pytest.mark.parametrize(("rows", "row", "field", "code"), INVALID,
                         ids=[f"{c}-{f}" for _, _, f, c in INVALID])
def test_every_validation_failure_is_422_naming_row_and_field(
        board, suite, token, rows, row, field, code):
    answer = board.report(suite.slug, token, body(rows))
    assert (answer.status, answer.error) == (422, "validation_failed")
    detail = answer.json["details"][0]
    assert (detail["row"], detail["field"], detail["code"]) == (row, field, code)
    if row is not None:
        assert f"row {row}" in answer.json["message"]
    assert nothing_stored()


def test_non_finite_numbers_are_422(board, suite, token):
    answer = board.report(suite.slug, token,
                          b'[{"nodeid": "a::x", "n": 200, "fails": 0, "upper95": NaN}]')
    assert (answer.status, answer.json["details"][0]["code"]) == (422, "not_finite")
    assert nothing_stored()


def test_a_bad_row_among_many_stores_nothing_of_the_others(board, suite, token):
    rows = [*known(30), measurement("a::bad", n=5, fails=6)]
    answer = board.report(suite.slug, token, body(rows))
    assert answer.status == 422 and answer.json["details"][0]["row"] == 30
    assert nothing_stored()


def test_metadata_in_the_query_is_validated_like_the_body(board, suite, token):
    answer = board.report(suite.slug, token, body(known(1)), query={"commit": "x" * 201})
    assert answer.status == 422
    assert answer.json["details"][0]["field"] == "commit"
    assert nothing_stored()


def test_a_query_flag_that_is_not_a_boolean_is_422(board, suite, token):
    answer = board.report(suite.slug, token, body(known(1)), query={"dry_run": "perhaps"})
    assert (answer.status, answer.error) == (422, "invalid_request")
    assert answer.json["details"][0]["field"] == "dry_run"
    assert nothing_stored()
