"""The edges of a trends range: the charts start with the suite's first data and the page
says so; a week cut by the range is marked in the chart, its table and its CSV; and no cap
line is drawn over days when the suite knew no node."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

from django.urls import reverse

from flakeboard.rules.trends_range import bucket_start
from runs.ingest import report_ingest
from runs.models import ReasonRollup
from tests.helpers import body, measurement
from tests.test_trends import page_charts


def _page(client, suite, **query):
    response = client.get(reverse("trends", args=[suite.slug]), query)
    assert response.status_code == 200
    return response.content.decode()


def _csv(client, suite, chart, **query) -> list[list[str]]:
    response = client.get(reverse("trends_csv", args=[suite.slug, chart]), query)
    assert response.status_code == 200
    text = b"".join(response.streaming_content).decode().lstrip("\ufeff")
    return list(csv.reader(io.StringIO(text)))


def test_the_charts_start_with_the_first_upload_and_say_so(client_for, viewer, suite, today):
    report_ingest(suite=suite, body=body([measurement("t.py::a"), measurement("t.py::b")]),
                  actor="ci")
    html = _page(client_for(viewer), suite, range="365", with_clean="1")
    assert f"No uploads or entries before {today}; the charts start there." in html
    specs, tables = page_charts(html)
    week = bucket_start(today, "week").isoformat()
    for key in ("budget", "budget-cumulative", "share"):
        assert specs[key]["labels"] == [week], key
    # The share and its cap start there too, over a week of one day.
    share = {d["label"]: d["data"] for d in specs["share"]["datasets"]}
    assert share["peak share %"] == [0]
    assert share["cap %"] == [round(100 * suite.max_quarantined_share, 2)]
    assert (specs["share"]["days"], specs["share"]["full_days"]) == ([1], 7)
    assert tables["share"][0][:2] == ["Week", "days"] and tables["share"][1][:2] == [week, "1"]
    assert f"Partial weeks, cut by the range: {week} (1 day), of 7 days" in html


def test_a_range_before_the_first_data_draws_nothing_and_says_why(client_for, viewer, suite,
                                                                  today):
    report_ingest(suite=suite, body=body([measurement("t.py::a")]), actor="ci")
    client = client_for(viewer)
    query = {"from": (today - timedelta(days=60)).isoformat(),
             "to": (today - timedelta(days=40)).isoformat()}
    html = _page(client, suite, **query)
    assert (f"Nothing uploaded or quarantined in this range: the first upload or entry is on "
            f"{today}.") in html
    specs, tables = page_charts(html)
    assert set(specs) <= {"expiring"}  # the only chart of the days ahead, not of the range
    assert tables["share"] == [["Day", "share %", "cap %", "quarantined", "test set"]]
    assert _csv(client, suite, "share", **query)[1:] == []  # nor a cap in the CSV


def test_a_suite_without_data_says_the_charts_wait_for_it(client_for, viewer, suite):
    html = _page(client_for(viewer), suite)
    assert "Nothing uploaded or quarantined yet" in html
    assert "<canvas" not in html


def test_weeks_cut_by_the_range_are_marked(client_for, viewer, suite, today):
    # From a Wednesday to the Thursday three weeks later: 5, 7, 7 and 4 days.
    end = today - timedelta(days=(today.weekday() - 3) % 7)
    start = end - timedelta(days=22)
    for day in (start - timedelta(days=10), start, start + timedelta(days=9), end):
        ReasonRollup.objects.create(suite=suite, day=day, source="verdicts",
                                    reason="property_fail", count=2)
    client = client_for(viewer)
    query = {"from": start.isoformat(), "to": end.isoformat(), "bucket": "week"}
    html = _page(client, suite, **query)
    assert "the charts start there" not in html  # data from before the range
    mondays = [(bucket_start(start, "week") + timedelta(weeks=i)).isoformat()
               for i in range(4)]
    specs, tables = page_charts(html)
    for key in ("verdicts", "verdicts-cumulative"):
        assert specs[key]["labels"] == mondays
        assert (specs[key]["days"], specs[key]["full_days"]) == ([5, 7, 7, 4], 7)
    assert [row[:2] for row in tables["verdicts"]] == [
        ["Week", "days"], *([m, d] for m, d in zip(mondays, "5774", strict=True))]
    assert (f"Partial weeks, cut by the range: {mondays[0]} (5 days) and {mondays[3]} "
            f"(4 days), of 7 days (lighter bars).") in html
    rows = _csv(client, suite, "verdicts", **query)
    assert rows[0] == ["Week", "days", "property_fail", "total"]
    assert [row[:3] for row in rows[1:]] == [
        [mondays[0], "5", "2"], [mondays[1], "7", "2"], [mondays[2], "7", "0"],
        [mondays[3], "4", "2"]]
    # The suite knew no node on any of these days: no share, and no cap across them.
    assert "share" not in specs
    assert {row[2] for row in tables["share"][1:]} == {"—"}
    # Per day, no bucket is partial: no days column.
    day_rows = _csv(client, suite, "verdicts", **{**query, "bucket": "day"})
    assert day_rows[0] == ["Day", "property_fail", "total"]
