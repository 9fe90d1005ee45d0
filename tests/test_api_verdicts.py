"""POST /api/v1/suites/{suite}/verdicts: signal records in, the arbiter's verdicts out."""

from datetime import timedelta

import pytest
from django.test import override_settings

from ledger.quarantine import quarantine_create
from runs.models import NodeVerdict, VerdictBatch
from tests.helpers import body, record

# SPEC 2.3, row by row: fixture drift > freeze > property failure > property not run.
PRECEDENCE = [
    # property  fixture    flake     verdict   reason
    ("pass",    "match",   "stable", "accept", "clean"),
    ("pass",    "match",   "frozen", "hold",   "frozen_node"),
    ("pass",    "drifted", "stable", "hold",   "fixture_drifted"),
    ("pass",    "drifted", "frozen", "hold",   "fixture_drifted"),
    ("pass",    "missing", "stable", "hold",   "fixture_missing"),
    ("pass",    "missing", "frozen", "hold",   "fixture_missing"),
    ("fail",    "match",   "stable", "reject", "property_fail"),
    ("fail",    "match",   "frozen", "hold",   "frozen_node"),
    ("fail",    "drifted", "stable", "hold",   "fixture_drifted"),
    ("fail",    "drifted", "frozen", "hold",   "fixture_drifted"),
    ("fail",    "missing", "stable", "hold",   "fixture_missing"),
    ("fail",    "missing", "frozen", "hold",   "fixture_missing"),
    ("not_run", "match",   "stable", "hold",   "property_not_run"),
    ("not_run", "match",   "frozen", "hold",   "frozen_node"),
    ("not_run", "drifted", "stable", "hold",   "fixture_drifted"),
    ("not_run", "drifted", "frozen", "hold",   "fixture_drifted"),
    ("not_run", "missing", "stable", "hold",   "fixture_missing"),
    ("not_run", "missing", "frozen", "hold",   "fixture_missing"),
]  # fmt: skip
EXIT = {"accept": 0, "reject": 1, "hold": 2}


def test_the_table_covers_every_signal_combination():
    assert len({row[:3] for row in PRECEDENCE}) == 18


@pytest.mark.parametrize(("prop", "lock", "status", "verdict", "reason"), PRECEDENCE,
                         ids=["-".join(row[:3]) for row in PRECEDENCE])
def test_each_signal_combination(board, suite, token, today, prop, lock, status, verdict,
                                 reason):
    freeze = (today + timedelta(days=3)).isoformat() if status == "frozen" else None
    records = [record("tests/a.py::test_x", prop, lock, status, freeze_expires=freeze)]
    answer = board.verdicts(suite.slug, token, body(records))
    assert answer.status == 201
    result = answer.json
    assert [(r["verdict"], r["reason"]) for r in result["records"]] == [(verdict, reason)]
    assert (result["verdict"], result["reason"]) == (verdict, reason)
    assert result["exit_code"] == EXIT[verdict]
    assert answer.headers["Flakeboard-Exit-Code"] == str(EXIT[verdict])
    assert result["reason_counts"] == {reason: 1}


def test_all_combinations_in_one_batch(board, suite, token, today):
    freeze = (today + timedelta(days=3)).isoformat()
    records = [record(f"tests/a.py::test_{i}", p, lk, s,
                      freeze_expires=freeze if s == "frozen" else None)
               for i, (p, lk, s, _, _) in enumerate(PRECEDENCE)]
    result = board.verdicts(suite.slug, token, body({"records": records, "patch": "p-17"})).json
    assert [(r["verdict"], r["reason"]) for r in result["records"]] == [
        row[3:] for row in PRECEDENCE]
    assert (result["verdict"], result["reason"], result["exit_code"]) == (
        "reject", "property_fail", 1)
    assert result["reason_counts"] == {
        "clean": 1, "fixture_drifted": 6, "fixture_missing": 6, "frozen_node": 3,
        "property_fail": 1, "property_not_run": 1}
    batch = VerdictBatch.objects.get()
    assert result["url"] == f"{board.url}/suites/acme/verdicts/{batch.pk}/"
    assert batch.patch == "p-17" and NodeVerdict.objects.count() == 18


def test_an_empty_batch_holds_for_no_evidence(board, suite, token):
    for payload in (b"[]", body({"records": [], "patch": "p-1"})):
        answer = board.verdicts(suite.slug, token, payload)
        assert (answer.json["verdict"], answer.json["reason"], answer.json["exit_code"]) == (
            "hold", "no_evidence", 2)
        assert answer.json["reason_counts"] == {"no_evidence": 1}
        assert answer.headers["Flakeboard-Exit-Code"] == "2"


def test_flags_come_back_per_node(board, suite, token, today):
    suite.max_quarantined_share = 1.0
    suite.save()
    quarantine_create(suite=suite, nodeid="tests/a.py::test_frozen", owner="@finley",
                      evidence="ci/run-1", expires=today + timedelta(days=9), actor="@finley",
                      today=today)
    records = [record("tests/a.py::test_frozen"),
               record("tests/a.py::test_claimed", status="frozen")]
    result = board.verdicts(suite.slug, token, body(records)).json
    assert [(r["verdict"], r["reason"], r["flags"], r["flake_status"])
            for r in result["records"]] == [
        ("hold", "frozen_node", ["ledger_disagrees"], "frozen"),
        ("hold", "frozen_node", ["freeze_without_expiry", "ledger_disagrees"], "frozen"),
    ]


def test_the_fixture_pin_decides_the_effective_lock(board, suite, token):
    suite.fixture_manifest, suite.fixture_seed = "sha256:feed", 7
    suite.save()
    records = [record("a::pinned", fixture_manifest="sha256:feed", seed=7),
               record("a::drifted", fixture_manifest="sha256:01d", seed=7)]
    result = board.verdicts(suite.slug, token, body(records)).json
    assert [(r["reason"], r["fixture_lock"]) for r in result["records"]] == [
        ("clean", "match"), ("fixture_drifted", "drifted")]


def test_query_metadata_for_a_bare_list(board, suite, token):
    board.verdicts(suite.slug, token, body([record("a::x")]),
                   query={"patch": "p-9", "commit": "abc", "evidence": "ci/run-3"})
    batch = VerdictBatch.objects.get()
    assert (batch.patch, batch.commit, batch.evidence) == ("p-9", "abc", "ci/run-3")


def test_the_same_batch_twice_is_stored_once(board, suite, token):
    payload = body([record("a::x"), record("a::y", prop="fail")])
    first = board.verdicts(suite.slug, token, payload)
    second = board.verdicts(suite.slug, token, payload)
    assert (first.status, second.status) == (201, 200)
    assert second.json["duplicate"] and second.json["id"] == first.json["id"]
    assert second.json["records"] == first.json["records"]
    assert VerdictBatch.objects.count() == 1 and NodeVerdict.objects.count() == 2


def test_a_dry_run_arbitrates_and_stores_nothing(board, suite, token):
    answer = board.verdicts(suite.slug, token, body([record("a::x", prop="fail")]),
                            query={"dry_run": "1"})
    assert answer.status == 200
    assert (answer.json["verdict"], answer.json["exit_code"], answer.json["id"]) == (
        "reject", 1, None)
    assert not VerdictBatch.objects.exists() and not NodeVerdict.objects.exists()
    assert not suite.nodes.exists()


@pytest.mark.parametrize(("records", "row", "field", "code"), [
    ([record("a::x"), record("a::y", prop="maybe")], 1, "property_check", "invalid_value"),
    ([record("a::x", lock="loose")], 0, "fixture_lock", "invalid_value"),
    ([record("a::x", status="flaky")], 0, "flake_status", "invalid_value"),
    ([{"node": "a::x", "property_check": "pass", "fixture_lock": "match"}], 0,
     "flake_status", "missing_field"),
    ([record("a::x", freeze_expires="next week")], 0, "freeze_expires", "invalid_date"),
    ([record("a::x", seed="7")], 0, "seed", "wrong_type"),
    ([record("a::x"), record("a::x")], 1, "node", "duplicate_node"),
    ({"records": {"a": 1}}, None, "records", "invalid_shape"),
])
def test_every_invalid_record_is_422_naming_row_and_field(board, suite, token, records, row,
                                                          field, code):
    answer = board.verdicts(suite.slug, token, body(records))
    assert (answer.status, answer.error) == (422, "validation_failed")
    detail = answer.json["details"][0]
    assert (detail["row"], detail["field"], detail["code"]) == (row, field, code)
    assert not VerdictBatch.objects.exists() and not suite.nodes.exists()


def test_upload_errors_apply_to_verdicts_too(board, suite, token):
    assert board.verdicts(suite.slug, token, b"{oops").status == 400
    assert board.verdicts(suite.slug, token, b"[]", content_type="text/plain").status == 415
    payload = body([record("a::x")])
    with override_settings(UPLOAD_MAX_BYTES=len(payload) - 1):
        assert board.verdicts(suite.slug, token, payload).status == 413
    assert not VerdictBatch.objects.exists()


@pytest.mark.parametrize("sent_in", ["envelope", "query"])
def test_a_patch_name_is_read_trimmed_and_one_of_spaces_only_is_refused(board, suite, token,
                                                                       sent_in):
    def send(patch: str, nodeid: str):
        if sent_in == "query":
            return board.verdicts(suite.slug, token, body([record(nodeid)]),
                                  query={"patch": patch})
        return board.verdicts(suite.slug, token, body({"records": [record(nodeid)],
                                                       "patch": patch}))

    assert send("  p-9 ", "a::x").status == 201
    assert VerdictBatch.objects.get().patch == "p-9"
    answer = send("   ", "a::y")
    assert (answer.status, answer.error) == (422, "validation_failed"), answer.raw
    assert [(d["row"], d["field"], d["code"]) for d in answer.json["details"]] == [
        (None, "patch", "invalid_value")]
    assert "field 'patch': must not be only spaces" in answer.json["message"]
    assert VerdictBatch.objects.count() == 1
