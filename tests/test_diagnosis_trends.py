"""Issue 51, for leads: the trends page's flaky tests per bucket by the category of their
diagnosis today, with its table and CSV; each flaky test counted once a bucket."""

from __future__ import annotations

import csv
import io
from datetime import datetime, time, timedelta

from django.urls import reverse
from django.utils import timezone

from board.diagnosis_trends import KEY, category_chart
from flakeboard import rules
from flakeboard.rules import CATEGORY_WORDS as WORDS
from flakeboard.rules.trends_range import DayRange, bucket_start
from junit.ingest import junit_ingest
from tests.junit_files import junit_xml
from tests.test_node_diagnoses import RESET, SEEDED, case, measured
from tests.test_trends import page_charts
from tests.world import module_world

SEEDED_NODE, EXTERNAL_NODE = "tests/test_a.py::test_seeded", "tests/test_a.py::test_external"


def flake(suite, nodeid, day, *, message="assert 1 == 2", commit=None):
    """One CI job on ``day`` that failed ``nodeid`` and passed it on a rerun."""
    now = timezone.make_aware(datetime.combine(day, time(12)))
    junit_ingest(suite=suite, body=junit_xml(case(nodeid, "failed", message),
                                             case(nodeid, "passed")), actor="ci", now=now,
                 query={"commit": commit or f"c{day}", "branch": "main", "job": "py3.12"})


def add_weeks(suite, today):
    this_week = bucket_start(today, "week")
    days = [this_week - timedelta(days=7), this_week - timedelta(days=6), this_week, today]
    for day in days:
        flake(suite, SEEDED_NODE, day)
    flake(suite, EXTERNAL_NODE, today, message=RESET, commit="x1")
    flake(suite, EXTERNAL_NODE, today, message=RESET, commit="x2")
    measured(suite, SEEDED_NODE, n=20, fails=3, classification="flaky",
             experiments={"seeded": SEEDED})
    return this_week - timedelta(days=7), this_week


# weeks: the week of today and the one before: the seeded test flaky on two days of each, the
# external one on today alone.
build_world, weeks = module_world("weeks", add_weeks)


def column(chart, category) -> list[int]:
    label = WORDS[rules.Category(category)].label
    return next(c.values for c in chart.columns if c.label == label)


def test_each_flaky_test_counts_once_a_bucket_under_its_category(suite, today, weeks):
    last, this = weeks
    chart = category_chart(suite, DayRange(last, today), "week", today=today)
    assert chart.labels == [last.isoformat(), this.isoformat()]
    assert column(chart, "seeded") == [1, 1]
    assert column(chart, "external") == [0, 1]
    assert column(chart, "unknown") == [0, 0]
    assert chart.rows[-1][-1] == 2  # flaky tests, in the table only


def test_per_day_a_test_counts_on_each_day_it_was_flaky(suite, today, weeks):
    chart = category_chart(suite, DayRange(today - timedelta(days=13), today), "day",
                           today=today)
    assert sum(column(chart, "seeded")) == len({*weeks, today, weeks[0] + timedelta(days=1)})
    assert sum(column(chart, "external")) == 1


def test_the_page_draws_it_and_its_csv_holds_its_table(client_for, viewer, suite, today,
                                                      weeks):
    client = client_for(viewer)
    html = client.get(reverse("trends", args=[suite.slug]), {"range": "30",
                                                              "bucket": "week"}).content
    html = html.decode()
    specs, tables = page_charts(html)
    spec = specs[KEY]
    assert spec["stacked"] is True
    assert [dataset["label"] for dataset in spec["datasets"]] == [
        words.label for words in WORDS.values()]
    assert "by the category of its diagnosis today" in html
    response = client.get(reverse("trends_csv", args=[suite.slug, KEY]),
                          {"range": "30", "bucket": "week"})
    rows = list(csv.reader(io.StringIO(response.getvalue().decode())))
    assert rows == tables[KEY]
    assert rows[0] == ["Week", "days", *(w.label for w in WORDS.values()), "flaky tests"]
    assert rows[-1][-1] == "2"


def test_nothing_flaky_says_so(client_for, viewer, suite):
    html = client_for(viewer).get(reverse("trends", args=[suite.slug])).content.decode()
    assert "No test was found flaky in this range." in html
