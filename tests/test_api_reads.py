"""Reading back what CI uploaded, and an entry's audit trail, over the API (read scope).

The lists are paged newest first: ``{"total", "page", "per_page", "next", "items"}``, where
``next`` is the following page's address, null on the last. One upload's GET answers its
stored result, ``duplicate`` true: what the same body uploaded again answers, byte for byte,
while no later attempt or ledger change judges it otherwise.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client

from ledger.quarantine import quarantine_clear, quarantine_create, quarantine_renew
from runs.ingest import report_ingest, signals_ingest
from tests.api_http import API, new_token
from tests.helpers import body, measurement, record

FLAKY = "tests/test_flaky.py::test_once"


def upload_reports(suite, metas):
    for i, meta in enumerate(metas):
        rows = [measurement(f"tests/test_{i}.py::test_ok"), measurement(FLAKY, fails=i % 3)]
        report_ingest(suite=suite, body=body({"measurements": rows, **meta}), actor="ci")


def collect(board, path, token, **query) -> list[dict]:
    """Every item of a list, following ``next`` from page to page."""
    answer = board.get(path, token=token, query=query)
    items = []
    while True:
        assert answer.status == 200, answer.raw
        items += answer.json["items"]
        if answer.json["next"] is None:
            return items
        answer = board.get(answer.json["next"].removeprefix(board.url), token=token)


def test_reports_are_paged_newest_first_and_filtered(board, suite):
    metas = [{"commit": f"c{i % 2}", "branch": "main" if i < 5 else "dev"} for i in range(7)]
    upload_reports(suite, metas)
    token = new_token(suite, "read")
    path = f"{API}/suites/{suite.slug}/reports"

    first = board.get(path, token=token, query={"per_page": 3})
    assert (first.json["total"], first.json["page"], first.json["per_page"]) == (7, 1, 3)
    assert first.json["next"].endswith("per_page=3&page=2")
    every = collect(board, path, token, per_page=3)
    assert [r["id"] for r in every] == sorted((r["id"] for r in every), reverse=True)
    assert len(every) == 7
    newest = every[0]
    assert (newest["commit"], newest["branch"], newest["status"]) == ("c0", "dev", "OK")
    assert newest["counts"] == {"measurements": 2, "fail": 0, "warn": 0, "ok": 2}
    assert newest["url"].endswith(f"/suites/{suite.slug}/reports/{newest['id']}/")

    assert [r["commit"] for r in collect(board, path, token, commit="c1")] == ["c1"] * 3
    dev = collect(board, path, token, branch="dev", commit="c0", per_page=1)
    assert [(r["branch"], r["commit"]) for r in dev] == [("dev", "c0")] * 1
    past = board.get(path, token=token, query={"page": 9})
    assert (past.json["items"], past.json["next"], past.json["total"]) == ([], None, 7)


@pytest.mark.parametrize("query", [{"per_page": 101}, {"per_page": 0}, {"page": 0}])
def test_a_page_size_past_the_max_is_422(board, suite, query):
    answer = board.get(f"{API}/suites/{suite.slug}/reports", token=new_token(suite, "read"),
                       query=query)
    assert (answer.status, answer.error) == (422, "invalid_request")


def test_verdicts_are_paged_and_filtered_by_patch(board, suite):
    for i in range(4):
        rows = {"records": [record(FLAKY, prop="fail" if i == 3 else "pass")],
                "patch": f"p-{i % 2}", "commit": f"c{i}"}
        signals_ingest(suite=suite, body=body(rows), actor="ci")
    token = new_token(suite, "read")
    path = f"{API}/suites/{suite.slug}/verdicts"
    every = collect(board, path, token, per_page=2)
    assert [(b["patch"], b["verdict"]) for b in every] == [
        ("p-1", "reject"), ("p-0", "accept"), ("p-1", "accept"), ("p-0", "accept")]
    assert every[0]["reason_counts"] == {"property_fail": 1} and every[0]["records"] == 1
    assert [b["patch"] for b in collect(board, path, token, patch="p-0")] == ["p-0", "p-0"]


@pytest.mark.parametrize(
    ("kind", "rows"),
    [("reports", {"measurements": [measurement(FLAKY, fails=9), measurement("t::ok")],
                  "commit": "abc", "branch": "main"}),
     ("verdicts", {"records": [record(FLAKY, prop="fail"), record("t::ok")], "patch": "p-1"})],
)
def test_an_uploads_get_answers_what_its_upload_answered(board, suite, kind, rows):
    """The GET answers the stored result: byte for byte what the same body uploaded again
    answers while nothing since judges it otherwise (``duplicate`` true, ``repeats_attempt``
    its attempt); the first upload's answer differs only in those."""
    write = new_token(suite, "write")
    path = f"{API}/suites/{suite.slug}/{kind}"
    first = board.post(path, body(rows), token=write)
    again = board.post(path, body(rows), token=write)
    assert (first.status, again.status) == (201, 200)

    got = board.get(f"{path}/{first.json['id']}", token=new_token(suite, "read"))

    assert got.status == 200
    assert got.raw == again.raw
    assert got.json == {**first.json, "duplicate": True, "repeats_attempt": 1}


@pytest.mark.parametrize("kind", ["reports", "verdicts", "entries"])
def test_an_id_of_another_suite_or_of_none_is_404(board, suite, other_suite, today, kind):
    upload_reports(other_suite, [{}] * 20)  # a test set, so the share stays under the cap
    made = {
        "reports": lambda: report_ingest(suite=other_suite, body=body([measurement(FLAKY)]),
                                         actor="ci").upload.pk,
        "verdicts": lambda: signals_ingest(suite=other_suite, body=body([record(FLAKY)]),
                                           actor="ci").upload.pk,
        "entries": lambda: quarantine_create(
            suite=other_suite, nodeid=FLAKY, owner="@otto", evidence="ci/run-1",
            expires=today + timedelta(days=5), actor="@otto", today=today).pk,
    }[kind]()
    tail = "/events" if kind == "entries" else ""
    token = new_token(suite, "read")
    for pk in (made, made + 1000):
        answer = board.get(f"{API}/suites/{suite.slug}/{kind}/{pk}{tail}", token=token)
        assert (answer.status, answer.error) == (404, "not_found"), answer.raw
        assert str(pk) in answer.json["message"]


def test_an_entrys_events_are_its_trail_oldest_first(board, suite, today):
    upload_reports(suite, [{}] * 20)  # a test set, so the share stays under the cap
    entry = quarantine_create(suite=suite, nodeid=FLAKY, owner="@finley", evidence="ci/run-1",
                              expires=today + timedelta(days=5), actor="@finley", today=today)
    quarantine_renew(entry=entry, expires=today + timedelta(days=20), evidence="ci/run-2",
                     actor="@lea", today=today, note="still flaky")
    quarantine_clear(entry=entry, note="fixed in #12", actor="token fbw_abc")

    answer = board.get(f"{API}/suites/{suite.slug}/entries/{entry.pk}/events",
                       token=new_token(suite, "read"))

    assert answer.status == 200
    assert (answer.json["entry"], answer.json["node"]) == (entry.pk, FLAKY)
    events = answer.json["events"]
    assert [(e["action"], e["actor"]) for e in events] == [
        ("create", "@finley"), ("renew", "@lea"), ("clear", "token fbw_abc")]
    assert [e["at"] for e in events] == sorted(e["at"] for e in events)
    renewal = events[1]
    assert renewal["note"] == "still flaky"
    assert renewal["before"]["evidence"] == "ci/run-1"
    assert renewal["after"]["evidence"] == "ci/run-2"
    assert events[2]["note"] == "fixed in #12"


@pytest.mark.parametrize(("kind", "upload"), [
    ("reports", lambda s, i: report_ingest(suite=s, body=body(
        [measurement(f"t::{i}"), measurement(FLAKY, fails=9)]), actor="ci")),
    ("verdicts", lambda s, i: signals_ingest(suite=s, body=body(
        [record(f"t::{i}"), record(FLAKY, prop="fail")]), actor="ci")),
])
def test_a_list_costs_the_same_few_queries_at_any_length(
        suite, kind, upload, django_assert_max_num_queries):
    for i in range(30):
        upload(suite, i)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {new_token(suite, 'read')}")
    # the token (read, and its first use recorded: two more), the count, the page
    with django_assert_max_num_queries(5):
        answer = client.get(f"{API}/suites/{suite.slug}/{kind}?per_page=30")
    assert answer.status_code == 200 and len(answer.json()["items"]) == 30


@pytest.mark.parametrize("query", ["branch=a%00b", "commit=%01", "page=1&page=2",
                                   "per_page=5&per_page=6"])
def test_a_filter_with_a_control_character_or_a_repeated_page_is_refused(
        client, suite, token, query):
    response = client.get(f"{API}/suites/{suite.slug}/reports?{query}",
                          headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 422
    assert response.json()["details"][0]["field"] in query
