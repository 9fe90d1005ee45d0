"""The leads' trends of retries at one commit (SPEC 2.4a, issue 29 item 5): attempts made
after a REJECT at the same patch and commit, and the nodes that flipped between attempts,
per day or week; each chart with its table and CSV, and in the trends API."""

from __future__ import annotations

import csv
import io
import itertools
from collections import Counter
from datetime import UTC, datetime, time, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from flakeboard.rules.trends import first_flip, retried_after_reject
from runs.ingest import signals_ingest
from runs.models import VerdictBatch
from runs.trend_counts import retries_after_reject, retry_counts
from tests.api_http import new_token
from tests.helpers import body, record
from tests.properties import db_property, rolled_back
from tests.test_trends import page_charts

A, B = "tests/p.py::test_a", "tests/p.py::test_b"
RUNS = itertools.count()


def today():
    """The board's today, read in the test (its clock is frozen there)."""
    return timezone.now().date()


def at(days_ago: int) -> datetime:
    return datetime.combine(today() - timedelta(days=days_ago), time(12), tzinfo=UTC)


def attempt(suite, days_ago, records, *, patch="p", commit="c1"):
    return signals_ingest(suite=suite, actor="ci", now=at(days_ago), body=body({
        "patch": patch, "commit": commit, "evidence": f"ci/run-{next(RUNS)}",
        "records": records})).upload


# --- the rules ------------------------------------------------------------------------


@pytest.mark.parametrize(("attempt_number", "previous", "counted"), [
    (1, None, False),  # a first attempt retries nothing
    (2, "reject", True),
    (3, "reject", True),
    (2, "hold", False),
    (2, "accept", False),
    (2, None, False),  # the previous attempt is not stored
])
def test_a_retry_after_a_reject(attempt_number, previous, counted):
    assert retried_after_reject(attempt_number, previous) is counted


@pytest.mark.parametrize(("failed_in", "passed_in", "first"), [
    ((), (), None), ((1,), (), None), ((), (1, 2), None),
    ((1,), (2,), 2), ((2,), (1,), 2), ((1, 3), (4,), 4), ((3,), (1, 2), 3),
    ((2, 5), (1, 4), 2),
])
def test_the_attempt_where_a_node_first_flipped(failed_in, passed_in, first):
    assert first_flip(failed_in, passed_in) == first


# --- a small history ------------------------------------------------------------------


@pytest.fixture
def history(suite):
    """Three days back, patch p at c1: REJECT, then two retries, both still REJECT; A flips
    at the second attempt (two days back) and stays flipped. One day back at c2: ACCEPT,
    then a REJECT where B flips. Today at c3: a REJECT, then a drifted fixture that holds
    it (a retry after a REJECT), then a retry after that HOLD (not one); patch q at c1
    once; two uploads without a commit."""
    attempt(suite, 3, [record(A, "fail"), record(B)])
    attempt(suite, 2, [record(A), record(B)])
    attempt(suite, 1, [record(A)])
    attempt(suite, 1, [record(A), record(B)], commit="c2")
    attempt(suite, 1, [record(B, "fail")], commit="c2")
    attempt(suite, 0, [record(A, "fail")], commit="c3")
    attempt(suite, 0, [record(A, "not_run", lock="drifted")], commit="c3")
    attempt(suite, 0, [record(B)], commit="c3")
    attempt(suite, 0, [record(A)], patch="q")
    attempt(suite, 0, [record(A, "fail")], commit="")
    attempt(suite, 0, [record(A)], commit="")
    return suite


def per_day(days_back: int, counts: dict[int, int]) -> list[int]:
    """A list over the last ``days_back`` days, oldest first, of counts by days ago."""
    return [counts.get(days_ago, 0) for days_ago in range(days_back - 1, -1, -1)]


def test_counts_per_day_and_per_week(history):
    counts = retry_counts(history, start=today() - timedelta(days=6), end=today())
    assert counts["buckets"][-1] == today().isoformat() and len(counts["buckets"]) == 7
    assert counts["after_reject"] == per_day(7, {2: 1, 1: 1, 0: 1})
    assert counts["flips"] == per_day(7, {2: 1, 1: 1})
    weekly = retry_counts(history, start=today() - timedelta(days=13), end=today(), bucket="week")
    assert (sum(weekly["after_reject"]), sum(weekly["flips"])) == (3, 2)
    assert all(datetime.fromisoformat(b).weekday() == 0 for b in weekly["buckets"])


def test_a_flip_counts_on_the_day_it_first_appeared_even_when_it_stays_flipped(history):
    """A is still flipped in c1's third attempt, a day back: a range from then on holds B's
    flip only, and every later attempt at c1 is still a retry after a REJECT."""
    counts = retry_counts(history, start=today() - timedelta(days=1), end=today())
    assert (counts["flips"], counts["after_reject"]) == ([1, 0], [1, 1])


def test_the_charts_tables_and_csv_hold_the_counts(client_for, lead, suite, history):
    client = client_for(lead)
    html = client.get(reverse("trends", args=[suite.slug]), {"range": "7"}).content.decode()
    specs, tables = page_charts(html)
    assert "Retries at one commit" in html
    # The charts start at the suite's first upload, three days back.
    for key, label, expected in (
            ("after-reject", "attempts after a reject", per_day(4, {2: 1, 1: 1, 0: 1})),
            ("flips", "nodes flipped", per_day(4, {2: 1, 1: 1}))):
        assert [d["label"] for d in specs[key]["datasets"]] == [label]
        assert specs[key]["datasets"][0]["data"] == expected
        header, *rows = tables[key]
        assert header == ["Day", label]
        assert [int(row[1]) for row in rows] == expected
        response = client.get(reverse("trends_csv", args=[suite.slug, key]), {"range": "7"})
        assert response["Content-Type"].startswith("text/csv")
        assert f"{suite.slug}-{key}-" in response["Content-Disposition"]
        assert list(csv.reader(io.StringIO(response.getvalue().decode()))) == tables[key]


def test_a_range_without_retries_says_so(client_for, lead, suite):
    attempt(suite, 0, [record(A, "fail")])
    html = client_for(lead).get(reverse("trends", args=[suite.slug]), {"range": "7"}
                                ).content.decode()
    specs, tables = page_charts(html)
    assert "after-reject" not in specs and "flips" not in specs
    assert "No attempt after a REJECT at the same commit in this range." in html
    assert "No node flipped between attempts in this range." in html
    assert tables["flips"] == [["Day", "nodes flipped"], [today().isoformat(), "0"]]


def test_the_trends_api_gives_the_retries_for_verdict_batches(board, suite, history):
    token = new_token(suite, "read")
    query = {"from": (today() - timedelta(days=6)).isoformat()}
    trends = board.trends(suite.slug, token, query=query).json
    assert trends["retries"] == {"after_reject": per_day(7, {2: 1, 1: 1, 0: 1}),
                                 "flips": per_day(7, {2: 1, 1: 1})}
    assert len(trends["buckets"]) == len(trends["retries"]["flips"])
    weekly = board.trends(suite.slug, token, query={**query, "bucket": "week"}).json
    assert len(weekly["retries"]["after_reject"]) == len(weekly["buckets"])
    assert board.trends(suite.slug, token, query={"source": "reports"}).json["retries"] is None


# --- the SQL is the rule, on random attempts ---------------------------------------------

NODES = (A, B)
sent = st.tuples(
    st.sampled_from(("p", "q")), st.sampled_from(("c1", "c2")), st.integers(0, 3),
    st.dictionaries(st.sampled_from(NODES),
                    st.tuples(st.sampled_from(("pass", "fail", "not_run")),
                              st.sampled_from(("match", "match", "drifted"))), max_size=2))


@db_property(40)
@given(st.lists(sent, min_size=1, max_size=8))
def test_the_counts_are_the_rules_over_every_attempt(suite, attempts):
    """Random attempts at two patches and commits over four days, in time order: the batches
    counted after a REJECT are those ``retried_after_reject`` picks, and each node that
    failed in one attempt and passed in another at a patch and commit is counted once, on
    the day of the attempt where it had first done both."""
    attempts = sorted(attempts, key=lambda a: -a[2])
    with rolled_back():
        flips, seen = Counter(), {}
        for patch, commit, days_ago, records in attempts:
            attempt(suite, days_ago, [record(n, check, lock) for n, (check, lock)
                                      in records.items()], patch=patch, commit=commit)
            for node, (check, _) in records.items():
                failed, passed = seen.setdefault((patch, commit, node), [False, False])
                now = [failed or check == "fail", passed or check == "pass"]
                if all(now) and not (failed and passed):
                    flips[days_ago] += 1
                seen[(patch, commit, node)] = now
        batches = {(b.patch, b.commit, b.attempt): b for b in VerdictBatch.objects.all()}
        picked = {
            b for (patch, commit, number), b in batches.items()
            if retried_after_reject(number, getattr(batches.get((patch, commit, number - 1)),
                                                    "verdict", None))}
        assert set(retries_after_reject(VerdictBatch.objects.all())) == picked
        counts = retry_counts(suite, start=today() - timedelta(days=3), end=today())
        assert counts["after_reject"] == per_day(4, Counter((today() - b.day).days
                                                            for b in picked))
        assert counts["flips"] == per_day(4, flips)
