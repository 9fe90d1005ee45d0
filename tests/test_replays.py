"""A body uploaded again (SPEC 2.4a, replays): it is stored once, and its answer is the gate
as it stands now, over every attempt at its patch and commit (a report's: its measurements
pooled over every report at its commit), never the verdict it had when first stored. So a
byte-identical rerun ("Re-run failed jobs") cannot turn a REJECT back into an ACCEPT."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from flakeboard import rules
from flakeboard.rules import FixtureLock, FlakeStatus, PropertyCheck
from runs.ingest import signals_ingest
from runs.models import Measurement, NodeVerdict, Report, VerdictBatch
from runs.results import summary_lines
from tests.api_http import API
from tests.helpers import body, measurement, record
from tests.properties import db_property, rolled_back

A, B = "tests/p.py::test_a", "tests/p.py::test_b"
META = {"patch": "p-1", "commit": "c1", "evidence": "ci/run-77"}


def replayed(again, first, field: str, outcome: str, reason: str) -> dict:
    """The answer to a replay of the first attempt's body, which the gate now fails: 200, a
    duplicate whose ``field`` is ``outcome`` for ``reason``, exit code 1 in body and header.
    It names the attempt whose body it is (the first), and the other it is judged with."""
    assert again.status == 200
    answer = again.json
    assert (answer["duplicate"], answer[field], answer["reason"], answer["exit_code"]) == (
        True, outcome, reason, 1)
    assert again.headers["Flakeboard-Exit-Code"] == "1"
    assert (answer["id"], answer["attempt"], answer["repeats_attempt"]) == (
        first.json["id"], 1, 1)
    return answer


def test_a_replayed_batch_answers_the_merged_verdict_now(board, suite, token):
    """The issue's reproduction: ACCEPT, then REJECT, then the first body again."""
    first_body = body({**META, "records": [record(A), record(B)]})
    first = board.verdicts(suite.slug, token, first_body)
    assert (first.status, first.json["verdict"], first.json["exit_code"]) == (201, "accept", 0)
    second = board.verdicts(suite.slug, token,
                            body({**META, "records": [record(A, "fail"), record(B)]}))
    assert (second.json["verdict"], second.json["reason"], second.json["exit_code"]) == (
        "reject", "property_fail", 1)
    stored = (VerdictBatch.objects.count(), NodeVerdict.objects.count())

    again = board.verdicts(suite.slug, token, first_body)

    answer = replayed(again, first, "verdict", "reject", "property_fail")
    assert [(e["attempt"], e["id"], e["verdict"]) for e in answer["earlier_attempts"]] == [
        (2, second.json["id"], "reject")]
    rows = {r["node"]: r for r in answer["records"]}
    assert (rows[A]["verdict"], rows[A]["attempts"]) == (
        "reject", {"runs": 2, "failed_in": [2], "passed_in": [1], "infrastructure_in": []})
    assert rows[B]["verdict"] == "accept"
    # Stored once: nothing new, and the first attempt's own page still says what it said.
    assert (VerdictBatch.objects.count(), NodeVerdict.objects.count()) == stored
    assert VerdictBatch.objects.get(pk=first.json["id"]).verdict == "accept"
    assert board.get(f"{API}/suites/{suite.slug}/verdicts/{first.json['id']}",
                     token=token).json["verdict"] == "accept"


def test_a_replayed_report_answers_its_pooled_verdict_now(board, suite, token):
    """OK, then FAIL (9/400 pooled), then the first body again: FAIL."""
    first_body = body({"commit": "c1", "evidence": "ci/run-77",
                       "measurements": [measurement(A, n=200, fails=0, seed_base=0)]})
    first = board.report(suite.slug, token, first_body)
    assert (first.json["status"], first.json["exit_code"]) == ("OK", 0)
    second = board.report(suite.slug, token, body({
        "commit": "c1", "evidence": "ci/run-78",
        "measurements": [measurement(A, n=200, fails=9, seed_base=200)]}))
    assert (second.json["status"], second.json["exit_code"]) == ("FAIL", 1)
    stored = (Report.objects.count(), Measurement.objects.count())

    again = board.report(suite.slug, token, first_body)

    answer = replayed(again, first, "status", "FAIL", "over_budget")
    assert [e["id"] for e in answer["earlier_attempts"]] == [second.json["id"]]
    row = answer["measurements"][0]
    assert (row["status"], row["n"], row["fails"]) == ("FAIL", 200, 0)  # as sent
    assert row["pooled"] == {"n": 400, "fails": 9, "upper95": 0.0422,
                             "reports": [second.json["id"]]}
    assert (Report.objects.count(), Measurement.objects.count()) == stored
    assert Report.objects.get(pk=first.json["id"]).status == "OK"


def test_a_replay_of_the_only_attempt_answers_as_it_did(board, suite, token):
    payload = body({**META, "records": [record(A, "fail")]})
    first = board.verdicts(suite.slug, token, payload).json
    again = board.verdicts(suite.slug, token, payload).json
    assert (first["repeats_attempt"], again["repeats_attempt"]) == (None, 1)
    assert {**again, "duplicate": False, "repeats_attempt": None} == first


def test_the_commands_summary_says_what_a_replay_repeats(suite):
    payload = body({**META, "records": [record(A)]})
    signals_ingest(suite=suite, actor="ci", body=payload)
    signals_ingest(suite=suite, actor="ci", body=body({**META, "records": [record(A, "fail")]}))
    again = signals_ingest(suite=suite, actor="ci", body=payload)
    lines = summary_lines(again)
    assert "batch REJECT property_fail: exit 1" in lines
    assert ("(a replay of attempt 1: nothing stored; judged with every attempt at this patch "
            "and commit now)") in lines


NODES = [f"tests/p.py::test_{i}" for i in range(3)]
CHECKS = ("pass", "fail", "not_run")
LOCKS = ("match", "drifted", "missing")
records_sent = st.dictionaries(st.sampled_from(NODES),
                               st.tuples(st.sampled_from(CHECKS), st.sampled_from(LOCKS)),
                               max_size=3)
# A step is a new attempt (its records) or a replay of an earlier step's body (an index).
step = st.one_of(records_sent, st.integers(min_value=0, max_value=20))


@db_property(40)
@given(st.lists(step, min_size=1, max_size=8))
def test_every_answer_exits_as_the_merged_verdict_replays_included(suite, steps):
    """For any sequence of attempts at one patch and commit, replays included: every answer's
    exit code is that of the pure rules' merge of every attempt stored, a replay stores
    nothing, and the merge ACCEPTs only when no attempt held an executed failure or a
    drifted or missing fixture."""
    with rolled_back():
        bodies, stored = [], []
        for run, sent in enumerate(steps):
            if isinstance(sent, int):
                if not bodies:
                    continue
                payload = bodies[sent % len(bodies)]
            else:
                payload = body({**META, "evidence": f"ci/run-{run}", "records": [
                    record(node, check, lock) for node, (check, lock) in sent.items()]})
                bodies.append(payload)
                stored.append(sent)
            outcome = signals_ingest(suite=suite, actor="ci", body=payload)
            assert outcome.duplicate is isinstance(sent, int)
            assert VerdictBatch.objects.count() == len(stored)
            verdicts = []
            for node in NODES:
                seen = [(PropertyCheck(r[node][0]), FixtureLock(r[node][1]))
                        for r in stored if node in r]
                if seen:
                    latest = rules.SignalRecord(node, PropertyCheck.PASS, FixtureLock.MATCH,
                                                FlakeStatus.STABLE)
                    verdicts.append(rules.judge_attempts(
                        latest, rules.merge_attempts(seen), ledger_entry=None,
                        today=outcome.upload.day).verdict)
            merged, _ = rules.aggregate(verdicts)
            assert (outcome.upload.verdict, outcome.upload.exit_code) == (
                merged.value, rules.EXIT_CODES[merged])
            if merged is rules.Verdict.ACCEPT:
                assert all(check != "fail" and lock == "match"
                           for r in stored for check, lock in r.values())
