"""GET /api/v1/suites/{suite}/trends: reason-code counts per day or week, from the rollups."""

from datetime import UTC, datetime, time, timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from runs.ingest import report_ingest, signals_ingest
from runs.models import ReasonRollup
from tests.api_http import new_token
from tests.helpers import body, measurement, record
from tests.properties import db_property
from tests.test_trends_range import DAY_TEXTS, accepted


@pytest.fixture
def token(suite):
    """A read token: reading the trends needs no more."""
    return new_token(suite, "read")


def at(day):
    return datetime.combine(day, time(12), tzinfo=UTC)


@pytest.fixture
def history(suite, today):
    """Three days of batches and one report, the oldest nine days ago."""
    days = [today - timedelta(days=9), today - timedelta(days=2), today]
    for i, day in enumerate(days):
        records = [record(f"a::x{i}"), record(f"a::y{i}", prop="fail"),
                   record(f"a::z{i}", lock="drifted")]
        signals_ingest(suite=suite, body=body(records), actor="ci", now=at(day))
    signals_ingest(suite=suite, body=b"[]", actor="ci", now=at(today))
    report_ingest(suite=suite, body=body([measurement("a::x", fails=9)]), actor="ci",
                  now=at(today - timedelta(days=2)))
    return days


def test_counts_per_day_over_the_last_30_days_by_default(board, suite, token, today, history):
    answer = board.trends(suite.slug, token)
    assert answer.status == 200
    trends = answer.json
    assert (trends["from"], trends["to"]) == (
        (today - timedelta(days=29)).isoformat(), today.isoformat())
    assert (trends["bucket"], trends["source"]) == ("day", "verdicts")
    assert len(trends["buckets"]) == 30
    assert trends["totals"] == {"clean": 3, "property_fail": 3, "fixture_drifted": 3,
                                "no_evidence": 1}
    assert trends["series"]["no_evidence"][-1] == 1
    nine_days_ago = trends["buckets"].index((today - timedelta(days=9)).isoformat())
    assert trends["series"]["clean"][nine_days_ago] == 1


def test_a_range_and_weekly_buckets(board, suite, token, today, history):
    start = today - timedelta(days=3)
    trends = board.trends(suite.slug, token, query={
        "from": start.isoformat(), "to": today.isoformat(), "bucket": "week"}).json
    assert trends["totals"] == {"clean": 2, "property_fail": 2, "fixture_drifted": 2,
                                "no_evidence": 1}
    monday = start - timedelta(days=start.weekday())
    assert trends["buckets"][0] == monday.isoformat()
    assert all(datetime.fromisoformat(b).weekday() == 0 for b in trends["buckets"])
    assert sum(sum(series) for series in trends["series"].values()) == 7


def test_report_reasons_are_their_own_source(board, suite, token, history):
    trends = board.trends(suite.slug, token, query={"source": "reports"}).json
    assert trends["source"] == "reports"
    assert trends["totals"] == {"over_budget": 1}


def test_the_counts_are_the_rollups(board, suite, token, today, history):
    ReasonRollup.objects.filter(reason="clean").update(count=40)
    assert board.trends(suite.slug, token).json["totals"]["clean"] == 120


def test_an_empty_range_has_buckets_and_no_series(board, suite, token):
    trends = board.trends(suite.slug, token, query={"from": "2020-01-01", "to": "2020-01-07"})
    assert trends.json["buckets"][0] == "2020-01-01" and len(trends.json["buckets"]) == 7
    assert (trends.json["series"], trends.json["totals"]) == ({}, {})


@pytest.mark.parametrize(("query", "field"), [
    ({"from": "2026-02-01", "to": "2026-01-01"}, "from"),
    ({"from": "2000-01-01", "to": "2026-01-01"}, "from"),
    ({"from": -366}, "from"),  # 367 days (a number is that many days from today)
    ({"from": 1}, "from"),  # after to, today
    ({"to": 2}, "to"),  # tomorrow is taken as today
    ({"from": 1, "to": 1}, "from"),  # after today, the range's end
    ({"to": "9999-12-31"}, "to"),
    ({"from": "0001-01-01", "to": "0001-01-07"}, "from"),
    ({"from": "1999-12-31", "to": "2000-01-06", "bucket": "week"}, "from"),
    ({"from": "2005-01-01", "to": "2025-12-31", "bucket": "week"}, "from"),  # 21 years
    ({"from": "yesterday"}, "from"),
    ({"to": "2026-02-30"}, "to"),
    ({"bucket": "month"}, "bucket"),
    ({"source": "everything"}, "source"),
])
def test_a_bad_parameter_is_422_naming_it(board, suite, token, today, query, field):
    query = {name: (today + timedelta(days=value)).isoformat() if isinstance(value, int)
             else value for name, value in query.items()}
    answer = board.trends(suite.slug, token, query=query)
    assert (answer.status, answer.error) == (422, "invalid_request")
    assert answer.json["details"][0]["field"] == field


@pytest.mark.parametrize("day", ["0", "1700000000", "2026-01-01T00:00:00", "2026-1-1",
                                 "2026-01-01\n", "\uff12\uff10\uff12\uff16-01-01"])
def test_days_are_written_yyyy_mm_dd_only(board, suite, token, day):
    answer = board.trends(suite.slug, token, query={"to": day})
    assert (answer.status, answer.json["details"][0]["field"]) == (422, "to")


def test_to_the_day_after_today_is_answered_up_to_today(board, suite, token, today, history):
    """Tomorrow in UTC is a client's today east of it: the answer ends today, and says so
    in its ``to``."""
    start = today - timedelta(days=9)
    trends = board.trends(suite.slug, token, query={
        "from": start.isoformat(), "to": (today + timedelta(days=1)).isoformat()})
    assert trends.status == 200
    assert (trends.json["from"], trends.json["to"]) == (start.isoformat(), today.isoformat())
    assert len(trends.json["buckets"]) == 10
    assert trends.json["buckets"][-1] == today.isoformat()


def test_the_longest_range_is_366_days(board, suite, token, today):
    start = today - timedelta(days=365)
    trends = board.trends(suite.slug, token, query={"from": start.isoformat()}).json
    assert (trends["from"], trends["to"]) == (start.isoformat(), today.isoformat())
    assert len(trends["buckets"]) == 366


@pytest.mark.parametrize(("query", "fields"), [
    ({"start": "2026-01-01"}, ["start"]),
    ({"end": "2026-01-31"}, ["end"]),
    ({"start": "2026-01-01", "end": "2026-01-31"}, ["start", "end"]),
    ({"from": "2026-01-01", "end": "2026-01-31"}, ["end"]),
])
def test_start_and_end_are_refused_naming_from_and_to(board, suite, token, query, fields):
    answer = board.trends(suite.slug, token, query=query)
    assert (answer.status, answer.error) == (422, "invalid_request")
    details = answer.json["details"]
    assert [(d["field"], d["code"]) for d in details] == [(f, "renamed") for f in fields]
    assert "use from" in answer.json["message"] or "use to" in answer.json["message"]


def test_the_page_and_the_api_show_the_same_30_days_by_default(board, suite, token, today,
                                                                client_for, viewer):
    trends = board.trends(suite.slug, token).json
    period = client_for(viewer).get(reverse("trends", args=[suite.slug])).context["period"]
    assert (trends["from"], trends["to"]) == (period.start.isoformat(), period.end.isoformat())
    assert period.days == 30 and period.end == today


@db_property(200)
@given(first=DAY_TEXTS, last=DAY_TEXTS, bucket=st.sampled_from(["day", "week"]))
def test_no_range_makes_the_api_fail(suite, token, first, last, bucket):
    """In-process, where a server error raises: each range is answered, or refused with a
    422 exactly when the page refuses it too."""
    query = {name: value for name, value in (("from", first), ("to", last)) if value is not None}
    answer = Client(HTTP_AUTHORIZATION=f"Bearer {token}").get(
        f"/api/v1/suites/{suite.slug}/trends", {**query, "bucket": bucket})
    # The API takes an empty from or to as sent (not a day); the page, as not set.
    ok = accepted(first, last, timezone.now().date()) and "" not in query.values()
    assert answer.status_code == (200 if ok else 422), answer.content[:300]
    if not ok:
        assert answer.json()["details"][0]["field"] in ("from", "to")
