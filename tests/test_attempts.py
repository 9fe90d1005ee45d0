"""Evidence at one commit accumulates (SPEC 2.4a), through the API: a retry of a gate adds
evidence and never replaces it, and a second measurement pools with the first."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from flakeboard import rules
from flakeboard.rules import FixtureLock, FlakeStatus, PropertyCheck
from runs.ingest import report_ingest, signals_ingest
from runs.models import Measurement, NodeVerdict, VerdictBatch
from runs.results import summary_lines
from tests.helpers import body, measurement, node_page, record
from tests.properties import db_property, rolled_back

A, B = "tests/p.py::test_a", "tests/p.py::test_b"


def attempt(board, suite, token, records, *, patch="p-1", commit="c1", query=None):
    return board.verdicts(suite.slug, token,
                          body({"patch": patch, "commit": commit, "records": records}),
                          query=query)


def test_a_clean_retry_does_not_forget_a_failure(board, suite, token):
    first = attempt(board, suite, token, [record(A, "fail"), record(B)])
    assert (first.json["verdict"], first.json["exit_code"], first.json["attempt"]) == (
        "reject", 1, 1)
    second = attempt(board, suite, token, [record(A), record(B)])
    assert second.status == 201
    answer = second.json
    assert (answer["verdict"], answer["reason"], answer["exit_code"]) == (
        "reject", "property_fail", 1)
    assert answer["attempt"] == 2
    assert [(e["attempt"], e["id"], e["verdict"]) for e in answer["earlier_attempts"]] == [
        (1, first.json["id"], "reject")]
    assert answer["earlier_attempts"][0]["url"].endswith(f"/verdicts/{first.json['id']}/")
    rows = {r["node"]: r for r in answer["records"]}
    assert rows[A]["attempts"] == {"runs": 2, "failed_in": [1], "passed_in": [2],
                                   "infrastructure_in": []}
    assert (rows[A]["verdict"], rows[A]["reason"], rows[A]["sent"]) == (
        "reject", "property_fail", True)
    assert rows[B]["attempts"] == {"runs": 2, "failed_in": [], "passed_in": [1, 2],
                                   "infrastructure_in": []}
    assert rows[B]["verdict"] == "accept"
    # Each attempt is stored as sent: the second one's record of A says pass.
    assert NodeVerdict.objects.get(batch_id=answer["id"], node__nodeid=A).property_check == "pass"
    assert VerdictBatch.objects.get(pk=answer["id"]).verdict == "reject"


def test_a_retry_that_leaves_the_failed_node_out_still_fails(board, suite, token):
    attempt(board, suite, token, [record(A, "fail"), record(B)])
    answer = attempt(board, suite, token, [record(B)]).json
    assert (answer["verdict"], answer["exit_code"]) == ("reject", 1)
    rows = {r["node"]: r for r in answer["records"]}
    assert (rows[A]["sent"], rows[A]["verdict"], rows[A]["attempts"]) == (
        False, "reject", {"runs": 1, "failed_in": [1], "passed_in": [], "infrastructure_in": []})
    batch = VerdictBatch.objects.get(pk=answer["id"])
    assert batch.record_count == 1
    # The third attempt reads only the second: the carried row keeps the evidence.
    third = attempt(board, suite, token, [record(A), record(B)]).json
    assert third["verdict"] == "reject"
    assert {r["node"]: r["attempts"] for r in third["records"]}[A] == {
        "runs": 2, "failed_in": [1], "passed_in": [3], "infrastructure_in": []}


def test_a_new_commit_starts_afresh_and_so_does_another_patch(board, suite, token):
    attempt(board, suite, token, [record(A, "fail")])
    later = attempt(board, suite, token, [record(A)], commit="c2").json
    other = attempt(board, suite, token, [record(A)], patch="p-2").json
    assert (later["verdict"], later["attempt"], later["earlier_attempts"]) == ("accept", 1, [])
    assert (other["verdict"], other["attempt"]) == ("accept", 1)


def test_batches_without_a_commit_are_each_their_own(board, suite, token):
    attempt(board, suite, token, [record(A, "fail")], commit="")
    answer = attempt(board, suite, token, [record(A)], commit="").json
    assert (answer["verdict"], answer["attempt"]) == ("accept", 1)


def test_not_run_and_fixture_merge_as_the_worst_seen(board, suite, token):
    attempt(board, suite, token, [record(A, lock="drifted"), record(B, "not_run")])
    answer = attempt(board, suite, token, [record(A), record(B)]).json
    rows = {r["node"]: r for r in answer["records"]}
    assert (rows[A]["verdict"], rows[A]["reason"], rows[A]["fixture_lock"]) == (
        "hold", "fixture_drifted", "drifted")
    assert (rows[B]["verdict"], rows[B]["attempts"]) == (
        "accept", {"runs": 2, "failed_in": [], "passed_in": [2], "infrastructure_in": []})


def test_a_duplicate_answers_the_stored_merged_result(board, suite, token):
    attempt(board, suite, token, [record(A, "fail")])
    second = attempt(board, suite, token, [record(A)])
    again = attempt(board, suite, token, [record(A)])
    assert again.status == 200
    assert again.json["duplicate"] is True
    for key in ("id", "verdict", "attempt", "earlier_attempts", "records"):
        assert again.json[key] == second.json[key], key
    assert VerdictBatch.objects.count() == 2


def test_a_dry_run_answers_as_the_next_attempt_and_stores_nothing(board, suite, token):
    attempt(board, suite, token, [record(A, "fail")])
    dry = attempt(board, suite, token, [record(A)], query={"dry_run": "true"}).json
    assert (dry["dry_run"], dry["attempt"], dry["verdict"]) == (True, 2, "reject")
    assert VerdictBatch.objects.count() == 1
    real = attempt(board, suite, token, [record(A)]).json
    assert real["attempt"] == 2


def test_a_freeze_now_withholds_every_attempts_failure(suite, today):
    """A node frozen by its record at the latest attempt holds, whatever earlier attempts
    said (SPEC 2.4a: a freeze withholds every attempt's evidence, both ways)."""
    meta = {"patch": "p-1", "commit": "c1"}
    signals_ingest(suite=suite, body=body({**meta, "records": [record(A, "fail")]}), actor="ci")
    frozen = record(A, status="frozen", freeze_expires=today.isoformat())
    outcome = signals_ingest(suite=suite, body=body({**meta, "records": [frozen]}), actor="ci")
    assert (outcome.upload.verdict, outcome.rows[0]["reason"]) == ("hold", "frozen_node")


def report(board, suite, token, rows, *, commit="c1"):
    return board.report(suite.slug, token, body({"commit": commit, "measurements": rows}))


def test_a_lucky_second_measurement_pools_with_the_unlucky_first(board, suite, token):
    first = report(board, suite, token, [measurement(A, n=200, fails=9, seed_base=0)])
    assert (first.json["status"], first.json["measurements"][0]["reason"]) == (
        "FAIL", "over_budget")
    second = report(board, suite, token, [measurement(A, n=200, fails=0, seed_base=200)])
    answer = second.json
    assert (answer["status"], answer["exit_code"]) == ("FAIL", 1)
    row = answer["measurements"][0]
    assert (row["status"], row["reason"], row["n"], row["fails"]) == (
        "FAIL", "over_budget", 200, 0)
    assert row["pooled"] == {"n": 400, "fails": 9, "upper95": 0.0422,
                             "reports": [first.json["id"]]}
    assert Measurement.objects.get(report_id=answer["id"]).fails == 0  # stored as sent
    # The stored answer says the same.
    assert board.get(f"/api/v1/suites/{suite.slug}/reports/{answer['id']}",
                     token=token).json["measurements"][0]["pooled"] == row["pooled"]


def test_the_same_seeds_measured_again_count_once(board, suite, token):
    report(board, suite, token, [measurement(A, n=200, fails=9, seed_base=0)])
    row = report(board, suite, token,
                 [measurement(A, n=200, fails=0, seed_base=0)]).json["measurements"][0]
    assert (row["pooled"]["n"], row["pooled"]["fails"], row["status"]) == (200, 9, "FAIL")


def test_measurements_at_another_commit_do_not_pool(board, suite, token):
    report(board, suite, token, [measurement(A, n=200, fails=9, seed_base=0)])
    answer = report(board, suite, token, [measurement(A, n=200, fails=0, seed_base=0)],
                    commit="c2").json
    assert answer["status"] == "OK"
    assert answer["measurements"][0]["pooled"] == {
        "n": 200, "fails": 0, "upper95": 0.0188, "reports": []}


def test_a_report_without_a_commit_does_not_pool(suite):
    report_ingest(suite=suite, body=body([measurement(A, fails=9)]), actor="ci")
    outcome = report_ingest(suite=suite, body=body([measurement(A, fails=0)]), actor="ci")
    assert outcome.upload.status == "OK"


NODES = [f"tests/p.py::test_{i}" for i in range(3)]
CHECKS = ("pass", "fail", "not_run")
LOCKS = ("match", "drifted", "missing")
sent_attempt = st.tuples(
    st.sampled_from(("c1", "c2")),
    st.dictionaries(st.sampled_from(NODES),
                    st.tuples(st.sampled_from(CHECKS), st.sampled_from(LOCKS)), max_size=3))


@db_property(40)
@given(st.lists(sent_attempt, min_size=1, max_size=6))
def test_each_attempt_is_judged_over_its_commits_attempts_only(suite, attempts):
    """Random attempts at two commits: each batch's verdict is the pure rules' merge of the
    attempts at its own commit up to it, and ACCEPT only when none of them held an executed
    failure or a drifted or missing fixture."""
    with rolled_back():
        sent = {"c1": [], "c2": []}
        for run, (commit, records) in enumerate(attempts):
            sent[commit].append(records)
            outcome = signals_ingest(suite=suite, actor="ci", body=body({
                "patch": "p", "commit": commit, "evidence": f"ci/run-{run}",
                "records": [record(node, check, lock) for node, (check, lock) in
                            records.items()]}))
            expected = {}
            for node in NODES:
                seen = [(PropertyCheck(r[node][0]), FixtureLock(r[node][1]))
                        for r in sent[commit] if node in r]
                if seen:
                    merged = rules.merge_attempts(seen)
                    latest = rules.SignalRecord(node, PropertyCheck.PASS, FixtureLock.MATCH,
                                                FlakeStatus.STABLE)
                    expected[node] = rules.judge_attempts(latest, merged, ledger_entry=None,
                                                          today=outcome.upload.day).verdict
            assert {r["node"]: r["verdict"] for r in outcome.rows} == {
                node: verdict.value for node, verdict in expected.items()}
            assert outcome.upload.attempt == len(sent[commit])
            verdict, _ = rules.aggregate(expected.values())
            assert outcome.upload.verdict == verdict.value
            if verdict is rules.Verdict.ACCEPT:
                assert all(check == "pass" or check == "not_run"
                           for r in sent[commit] for check, _ in r.values())
                assert all(lock == "match" for r in sent[commit] for _, lock in r.values())


def test_the_batch_page_shows_the_attempt_its_earlier_ones_and_the_flips(client_for, viewer,
                                                                          suite):
    meta = {"patch": "p-1", "commit": "c1"}
    first = signals_ingest(suite=suite, actor="ci", body=body(
        {**meta, "records": [record(A, "fail"), record(B)]})).upload
    second = signals_ingest(suite=suite, actor="ci", body=body(
        {**meta, "records": [record(A)]})).upload
    page = client_for(viewer).get(f"/suites/{suite.slug}/verdicts/{second.pk}/")
    html = page.content.decode()
    assert page.status_code == 200
    assert "2 at this patch and commit, judged with the earlier one" in html
    assert f'href="/suites/{suite.slug}/verdicts/{first.pk}/">attempt 1</a>' in html
    assert "1 node flipped between attempts: flaky evidence" in html
    assert "A retry will not change this verdict" in html
    assert "<strong>failed in 1</strong>; passed in 2" in html
    # B was not in the second upload: its record comes from the first, and says so.
    assert "not in this upload: its record from an earlier attempt" in html
    assert "1 sent, and 1 from earlier attempts that this one left out" in html
    assert html.count("flipped between attempts") == 1


def test_the_report_page_shows_the_pooled_counts_and_where_they_came_from(client_for, viewer,
                                                                          suite):
    first = report_ingest(suite=suite, actor="ci", body=body(
        {"commit": "c1", "measurements": [measurement(A, fails=9, seed_base=0)]})).upload
    second = report_ingest(suite=suite, actor="ci", body=body(
        {"commit": "c1", "measurements": [measurement(A, fails=0, seed_base=200)]})).upload
    html = client_for(viewer).get(f"/suites/{suite.slug}/reports/{second.pk}/").content.decode()
    assert "report 2 at it: pooled with" in html
    assert f'<a href="/suites/{suite.slug}/reports/{first.pk}/">report {first.pk}</a>' in html
    assert "<strong>9/400</strong>, upper95 0.0422" in html
    assert second.status == "FAIL"


def test_the_commands_summary_names_the_attempt(suite):
    meta = {"patch": "p-1", "commit": "c1"}
    signals_ingest(suite=suite, actor="ci", body=body({**meta, "records": [record(A, "fail")]}))
    second = signals_ingest(suite=suite, actor="ci", body=body({**meta, "records": [record(A)]}))
    assert "(attempt 2 at this patch and commit: judged with the earlier ones)" in (
        summary_lines(second))


def test_the_node_page_marks_a_flip_and_a_row_carried_from_an_earlier_attempt(
        client_for, viewer, suite):
    meta = {"patch": "p-1", "commit": "c1"}
    signals_ingest(suite=suite, actor="ci", body=body(
        {**meta, "records": [record(A, "fail"), record(B)]}))
    signals_ingest(suite=suite, actor="ci", body=body({**meta, "records": [record(A)]}))
    client = client_for(viewer)
    flipped = client.get(node_page(suite.slug, A)).content.decode()
    carried = client.get(node_page(suite.slug, B)).content.decode()
    assert flipped.count(">flipped</span>") == 1
    assert "not in this upload: judged on earlier attempts" not in flipped
    assert carried.count("not in this upload: judged on earlier attempts") == 1
