"""The trends page's range and bucket: they switch with htmx or a plain GET, a refused range
is a 400 that says why, no range makes the page or a CSV fail, and the cost does not grow
with history. The charts' numbers are in test_trends.py."""

from __future__ import annotations

import re
from datetime import date, timedelta
from urllib.parse import urlencode

import pytest
from django.db import connection
from django.http import QueryDict
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from flakeboard.rules.trends_range import (
    EARLIEST_DAY,
    MAX_RANGE_DAYS,
    DayRange,
    day_range,
    last_days,
)
from runs.ingest import report_ingest, signals_ingest
from runs.views.trends import TrendsForm
from tests.helpers import body, measurement, record
from tests.properties import db_property

# --- range, bucket and htmx -------------------------------------------------------------


def _get(client, suite, htmx=False, **query):
    headers = {"HX-Request": "true"} if htmx else {}
    return client.get(reverse("trends", args=[suite.slug]), query, headers=headers)


def test_presets_and_the_default_bucket(client_for, suite, viewer, today):
    client = client_for(viewer)
    response = _get(client, suite)
    period = response.context["period"]
    assert (period.start, period.end, period.bucket) == (today - timedelta(days=29), today,
                                                          "day")
    assert '<option value="30" selected>' in response.content.decode()
    period = _get(client, suite, range="90").context["period"]
    assert (period.days, period.bucket) == (90, "day")
    period = _get(client, suite, range="365").context["period"]
    assert (period.days, period.bucket) == (365, "week")
    period = _get(client, suite, range="7", bucket="week").context["period"]
    assert (period.days, period.bucket, period.query) == (7, "week", "range=7&bucket=week")


def test_switching_range_pushes_the_canonical_query_and_lets_the_range_pick_the_bucket(
        client_for, suite, viewer):
    # The form sends every field along: the days of the last range and its bucket as shown.
    sent = {"range": "365", "from": "2026-01-01", "to": "2026-01-30", "bucket": "",
            "shown_from": "2026-01-01", "shown_to": "2026-01-30"}
    response = _get(client_for(viewer), suite, htmx=True, **sent)
    period = response.context["period"]
    assert (period.days, period.bucket) == (365, "week")
    assert response["HX-Push-Url"] == reverse("trends", args=[suite.slug]) + "?range=365"
    assert '<option value="" selected>per day, per week beyond 90 days</option>' in (
        response.content.decode())
    asked = _get(client_for(viewer), suite, htmx=True, range="365", bucket="day")
    assert asked["HX-Push-Url"].endswith("?range=365&bucket=day")


def test_a_custom_range_is_kept_in_the_url(client_for, suite, viewer, today):
    start = today - timedelta(days=10)
    response = _get(client_for(viewer), suite, range="custom", bucket="day", with_clean="1",
                    **{"from": start.isoformat(), "to": today.isoformat()})
    period = response.context["period"]
    assert (period.start, period.end, period.include_clean) == (start, today, True)
    assert f"from={start.isoformat()}&to={today.isoformat()}" in period.query
    html = response.content.decode()
    assert f'name="from" id="id_from" value="{start.isoformat()}"' in html
    assert '<option value="custom" selected>' in html


def test_from_and_to_without_a_preset_are_a_custom_range(client_for, suite, viewer, today):
    start = today - timedelta(days=3)
    response = _get(client_for(viewer), suite, **{"from": start.isoformat()})
    period = response.context["period"]
    assert (period.start, period.end, period.preset) == (start, today, "custom")


def test_a_preset_wins_over_the_days_the_form_showed_and_sends_back(client_for, suite,
                                                                   viewer, today):
    # The form showed another range's days (or a day-old page shows yesterday's): the
    # preset chosen recomputes them.
    stale = {"from": "2001-01-01", "to": "2001-02-01", "shown_from": "2001-01-01",
             "shown_to": "2001-02-01"}
    period = _get(client_for(viewer), suite, range="7", **stale).context["period"]
    assert (period.start, period.end, period.preset) == (today - timedelta(days=6), today,
                                                         "7")


def _form(today, **query):
    form = TrendsForm(QueryDict(urlencode(query)), today=today)
    return form, form.period()


def test_days_typed_beside_a_preset_are_a_custom_range(today):
    week = last_days(7, today)
    typed = {"from": (today - timedelta(days=20)).isoformat(), "to": today.isoformat()}
    showed = {"shown_from": week.start.isoformat(), "shown_to": week.end.isoformat()}
    # As the page's form sends them: days that differ from those it showed.
    form, period = _form(today, range="7", **typed, **showed)
    assert form.custom
    assert (period.preset, period.start, period.end) == ("custom", today - timedelta(days=20),
                                                         today)
    # One day typed is enough; the other keeps the day shown.
    form, period = _form(today, range="7", **{"from": typed["from"], "to": week.end}, **showed)
    assert (period.preset, period.days) == ("custom", 21)
    # From a link without the days shown: days that differ from the preset's own.
    form, period = _form(today, range="30", **typed)
    assert (period.preset, period.start) == ("custom", today - timedelta(days=20))


def test_the_days_a_preset_showed_sent_back_keep_the_preset(today):
    week, month = last_days(7, today), last_days(30, today)
    showed = {"from": week.start.isoformat(), "to": week.end.isoformat()}
    # Nothing typed: the preset showed its days, or none were sent.
    for query in ({**showed, "shown_from": showed["from"], "shown_to": showed["to"]}, showed,
                  {"from": "", "to": ""}, {}):
        form, period = _form(today, range="7", **query)
        assert not form.custom
        assert (period.preset, period.start, period.end) == ("7", week.start, week.end)
    # Another preset chosen, the days of the one shown sent back unchanged: the new preset.
    form, period = _form(today, range="30", **showed, shown_from=showed["from"],
                         shown_to=showed["to"])
    assert (period.preset, period.start, period.end) == ("30", month.start, month.end)


def test_a_typed_day_that_is_refused_is_kept_in_a_custom_form(client_for, suite, viewer,
                                                              today):
    response = _get(client_for(viewer), suite, range="30", to="2001-01-01",
                    **{"from": "2001-02-01"})
    assert response.status_code == 400
    html = response.content.decode()
    assert '<option value="custom" selected>' in html
    assert 'name="shown_from" value="2001-02-01"' in html


def test_the_date_inputs_are_editable_and_reach_the_day_after_today(client_for, suite,
                                                                     viewer, today):
    html = _get(client_for(viewer), suite).content.decode()
    tomorrow = (today + timedelta(days=1)).isoformat()
    for name in ("from", "to"):
        field = re.search(rf'<input type="date" name="{name}"[^>]*>', html).group(0)
        assert "readonly" not in field
        assert f'max="{tomorrow}"' in field and 'aria-describedby="days-hint"' in field
    assert 'id="days-hint"' in html


@pytest.mark.parametrize("preset", [None, "custom", "30"])
def test_to_the_day_after_today_is_shown_up_to_today_and_said(client_for, suite, viewer,
                                                              today, preset):
    tomorrow = (today + timedelta(days=1)).isoformat()
    start = today - timedelta(days=6)
    query = {"from": start.isoformat(), "to": tomorrow}
    if preset:
        query["range"] = preset
    client = client_for(viewer)
    response = _get(client, suite, **query)
    assert response.status_code == 200
    period = response.context["period"]
    assert (period.start, period.end, period.preset) == (start, today, "custom")
    html = response.content.decode()
    assert f"to {tomorrow} is after today in UTC; shown up to {today.isoformat()}." in html
    csv_response = client.get(reverse("trends_csv", args=[suite.slug, "share"]), query)
    assert csv_response.status_code == 200
    assert f"-{start}-{today}-day.csv" in csv_response["Content-Disposition"]


def _refused(response, message):
    assert response.status_code == 400
    assert message in response.content.decode()


# (query, the words of the reason shown); days are counted back from today.
BAD_RANGES = [
    ({"range": "custom", "to": -2}, "the day after today"),
    ({"range": "custom", "from": -1, "to": -1}, "is after today"),
    ({"from": -1}, "is after to"),
    ({"from": 5, "to": 10}, "is after to"),
    ({"from": 366}, "at most 366"),
    ({"from": "0001-01-01", "to": "0001-01-07"}, "before 2000-01-01"),
    ({"to": "9999-12-31"}, "the day after today"),
    ({"from": "1999-12-31"}, "before 2000-01-01"),
    ({"from": "yesterday"}, "YYYY-MM-DD"),
    ({"to": "2026-02-30"}, "YYYY-MM-DD"),
    ({"from": "2026-01-01T00:00:00"}, "YYYY-MM-DD"),
    ({"range": "12"}, "Choose one of the listed ranges."),
    ({"bucket": "month"}, "Choose per day or per week."),
]


def _days_back(query, today):
    return {name: (today - timedelta(days=value)).isoformat() if isinstance(value, int)
            else value for name, value in query.items()}


@pytest.mark.parametrize(("query", "message"), BAD_RANGES)
def test_a_refused_range_is_a_400_that_says_why(client_for, suite, viewer, today, query,
                                                message):
    query = _days_back(query, today)
    client = client_for(viewer)
    response = _get(client, suite, **query)
    _refused(response, message)
    html = response.content.decode()
    assert 'id="trends-panel"' in html and "<canvas" not in html
    if "from" in query:  # the day sent is kept in its field, to be corrected
        assert f'name="from" id="id_from" value="{query["from"]}"' in html
    csv_response = client.get(reverse("trends_csv", args=[suite.slug, "share"]), query)
    assert csv_response["Content-Type"].startswith("text/plain")
    _refused(csv_response, message)


def test_the_longest_range_is_shown(client_for, suite, viewer, today):
    start = today - timedelta(days=365)
    period = _get(client_for(viewer), suite, **{"from": start.isoformat()}).context["period"]
    assert (period.start, period.days, period.bucket) == (start, 366, "week")


def test_htmx_loads_the_whole_page_to_show_a_refused_range(client_for, suite, viewer):
    url = reverse("trends", args=[suite.slug])
    response = client_for(viewer).get(url, {"range": "custom", "to": "9999-12-31"},
                                      headers={"HX-Request": "true"})
    assert response.status_code == 400
    assert response["HX-Redirect"] == f"{url}?range=custom&to=9999-12-31"


@pytest.mark.parametrize("chart", [None, "share"])
def test_start_and_end_are_redirected_to_from_and_to(client_for, suite, viewer, today, chart):
    url = (reverse("trends_csv", args=[suite.slug, chart]) if chart
           else reverse("trends", args=[suite.slug]))
    start = today - timedelta(days=9)
    client = client_for(viewer)
    response = client.get(f"{url}?range=custom&start={start}&end={today}&bucket=week")
    assert response.status_code == 302
    assert response["Location"] == f"{url}?range=custom&from={start}&to={today}&bucket=week"
    assert client.get(response["Location"]).status_code == 200
    # Sent under both names, the new one wins.
    response = client.get(f"{url}?start=2001-01-01&from={start}")
    assert response["Location"] == f"{url}?from={start}"


@pytest.mark.parametrize("chart", [None, "share"])
def test_an_old_link_to_year_one_is_refused_not_a_server_error(client_for, suite, viewer,
                                                               chart):
    url = (reverse("trends_csv", args=[suite.slug, chart]) if chart
           else reverse("trends", args=[suite.slug]))
    response = client_for(viewer).get(
        url, {"range": "custom", "start": "0001-01-01", "end": "0001-01-07"}, follow=True)
    _refused(response, "before 2000-01-01")


# What a from or to may be: absent, any day of the calendar, a day near today or near the
# earliest day (where ranges are accepted), or any text at all.
TODAY = timezone.now().date()
DAY_TEXTS = st.one_of(
    st.none(),
    st.dates().map(date.isoformat),
    st.dates(TODAY - timedelta(days=400), TODAY + timedelta(days=3)).map(date.isoformat),
    st.dates(EARLIEST_DAY - timedelta(days=40),
             EARLIEST_DAY + timedelta(days=400)).map(date.isoformat),
    st.text(max_size=24),
)
CSV_CHARTS = ["verdicts", "budget-cumulative", "budget-distribution", "share", "expiring"]


def accepted(first, last, today) -> bool:
    """Whether the range is one to show; what the page and the API must both answer."""
    return isinstance(day_range(first or None, last or None, today=today), DayRange)


@db_property(150)
@given(first=DAY_TEXTS, last=DAY_TEXTS, preset=st.sampled_from([None, "custom"]),
       bucket=st.sampled_from(["day", "week"]), chart=st.sampled_from(CSV_CHARTS))
def test_no_range_makes_the_page_or_a_csv_fail(client_for, suite, viewer, first, last,
                                               preset, bucket, chart):
    query = {name: value for name, value in
             (("range", preset), ("from", first), ("to", last), ("bucket", bucket))
             if value is not None}
    client = client_for(viewer)
    page = client.get(reverse("trends", args=[suite.slug]), query)
    today = timezone.now().date()
    assert page.status_code == (200 if accepted(first, last, today) else 400)
    if page.status_code == 200:
        period = page.context["period"]
        assert EARLIEST_DAY <= period.start <= period.end <= today
        assert period.days <= MAX_RANGE_DAYS
    response = client.get(reverse("trends_csv", args=[suite.slug, chart]), query)
    assert response.status_code == page.status_code


def test_htmx_gets_the_charts_partial_and_history_restore_the_page(client_for, suite, viewer):
    client = client_for(viewer)
    partial = client.get(reverse("trends", args=[suite.slug]), {"range": "30"},
                         headers={"HX-Request": "true"})
    html = partial.content.decode()
    assert partial.status_code == 200
    assert "<html" not in html and 'id="trends-panel"' in html
    assert 'hx-push-url="true"' in html
    assert "HX-Request" in partial["Vary"]
    restore = client.get(reverse("trends", args=[suite.slug]), {"range": "30"},
                         headers={"HX-Request": "true", "HX-History-Restore-Request": "true"})
    assert "<html" in restore.content.decode()


def test_the_page_works_without_javascript(client_for, suite, viewer):
    html = _get(client_for(viewer), suite).content.decode()
    form = re.search(r'<form class="range-form" method="get" action="([^"]+)"', html)
    assert form and form.group(1) == reverse("trends", args=[suite.slug])
    assert '<button type="submit">Show</button>' in html
    assert "Per-node verdicts" in html  # the charts' titles and tables are in the HTML
    assert "<script>" not in html and " style=" not in html and " onclick=" not in html


@pytest.mark.slow
def test_query_count_does_not_grow_with_history(client_for, suite, viewer, today,
                                               django_assert_max_num_queries):
    client = client_for(viewer)

    def upload_days(first, last):
        for day in range(first, last):
            now = timezone.now() - timedelta(days=day)
            rows = [measurement(f"tests/q.py::t{i}", fails=i % 3) for i in range(5)]
            report_ingest(suite=suite, actor="ci", now=now, body=body(rows))
            signals_ingest(suite=suite, actor="ci", now=now,
                           body=body([record(f"tests/q.py::t{i}", prop="not_run")
                                      for i in range(4)]))

    def queries():
        with CaptureQueriesContext(connection) as captured:
            assert _get(client, suite, range="365").status_code == 200
        return len(captured)

    upload_days(0, 5)
    few = queries()
    upload_days(5, 120)
    assert queries() == few
    # Two of them count the retries at one commit, from the batches (not the rollups), and
    # one the new tests measured at birth, from the guard's measurements; nine the flaky
    # tests by category (three find them, six diagnose them).
    with django_assert_max_num_queries(27):
        _get(client, suite, range="90")
