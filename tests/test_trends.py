"""The trends page: its charts' JSON, tables and CSV carry the counts the raw rows give, on
random histories and on the demo suite; the quarantined share over time follows the ledger;
the range and bucket switch with htmx or a plain GET; the cost does not grow with history."""

from __future__ import annotations

import csv
import heapq
import io
import itertools
import json
import re
from collections import Counter
from datetime import UTC, date, datetime, time, timedelta
from html.parser import HTMLParser

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from flakeboard.trends_rules import EARLIEST_DAY, MAX_RANGE_DAYS, DayRange, day_range
from ledger.models import Node, QuarantineEntry, Suite
from ledger.quarantine import quarantine_clear, quarantine_create
from ledger.selectors import share_figures
from ledger.tiers import tier_rule_add
from runs.ingest import report_ingest, signals_ingest
from runs.rollups import counts_from_raw, counts_from_rollups, rebuild_rollups
from runs.trends import bucket_start, expiring_per_week, share_over_time
from tests.helpers import body, measurement, record
from tests.properties import db_property, rolled_back
from tests.test_rollups_property import DAYS, FIRST_DAY, histories, ingested

SOURCES = {"verdicts": "verdicts", "budget": "reports"}


class _Tables(HTMLParser):
    """Collects every <table data-chart-table="KEY"> as rows of cell texts."""

    def __init__(self):
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._key = None
        self._cell = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and "data-chart-table" in attrs:
            self._key = attrs["data-chart-table"]
            self.tables[self._key] = []
        elif self._key and tag == "tr":
            self.tables[self._key].append([])
        elif self._key and tag in ("td", "th"):
            self._cell = []

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag):
        if self._key and tag in ("td", "th") and self._cell is not None:
            self.tables[self._key][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._key = None


def page_charts(html: str) -> tuple[dict[str, dict], dict[str, list[list[str]]]]:
    """The JSON of every chart (by key) and every chart's table (header first)."""
    specs = {
        key: json.loads(raw)
        for key, raw in re.findall(
            r'<script id="chart-([\w-]+)" type="application/json">(.*?)</script>', html, re.S
        )
    }
    parser = _Tables()
    parser.feed(html)
    return specs, parser.tables


def raw_per_bucket(raw: dict, source: str, start, end, bucket: str) -> dict[str, Counter]:
    """reason → {bucket start ISO: count}, from counts_from_raw, within [start, end]."""
    found: dict[str, Counter] = {}
    for (src, day, reason), count in raw.items():
        if src == source and start <= day <= end:
            found.setdefault(reason, Counter())[bucket_start(day, bucket).isoformat()] += count
    return found


def assert_page_agrees_with_raw(html, suite, start, end, bucket, with_clean=True):
    specs, tables = page_charts(html)
    everything = counts_from_raw(suite)
    for key, source in SOURCES.items():
        raw = raw_per_bucket(everything, source, start, end, bucket)
        if not with_clean:
            raw.pop("clean" if source == "verdicts" else "within_budget", None)
        spec = specs.get(key)
        if not raw:
            assert spec is None
            continue
        drawn = {d["label"]: d["data"] for d in spec["datasets"]}
        assert set(drawn) == set(raw)
        for reason, data in drawn.items():
            assert data == [raw[reason][label] for label in spec["labels"]]
        # The table under the chart holds the same numbers, plus each bucket's total.
        header, *rows = tables[key]
        assert header[1:-1] == list(drawn) and header[-1] == "total"
        for i, row in enumerate(rows):
            assert row[0] == spec["labels"][i]
            counts = [int(cell) for cell in row[1:]]
            assert counts[:-1] == [drawn[r][i] for r in drawn]
            assert counts[-1] == sum(counts[:-1])
        cumulative = {d["label"]: d["data"] for d in specs[f"{key}-cumulative"]["datasets"]}
        assert {r: c[-1] for r, c in cumulative.items()} == {
            r: sum(c.values()) for r, c in raw.items()
        }
        _, *distribution = tables[f"{key}-distribution"]
        assert {row[0]: int(row[2]) for row in distribution} == {
            r: sum(c.values()) for r, c in raw.items()
        }


# --- what is not a chart ---------------------------------------------------------------


def test_an_unknown_chart_has_no_csv(client_for, suite, viewer):
    url = reverse("trends_csv", args=[suite.slug, "nonsense"])
    assert client_for(viewer).get(url).status_code == 404


# --- the numbers agree with the raw rows ------------------------------------------------


@db_property(40)
@given(histories(), st.sampled_from(["day", "week"]), st.booleans())
def test_charts_and_tables_agree_with_raw_rows(client, db, lead, history, bucket, with_clean):
    with ingested(history, "random") as suite:
        suite.memberships.create(user=lead, role="lead")
        client.force_login(lead)
        start, end = FIRST_DAY + timedelta(days=2), FIRST_DAY + timedelta(days=DAYS - 3)
        query = {"range": "custom", "from": start, "to": end, "bucket": bucket}
        if with_clean:
            query["with_clean"] = "1"
        response = client.get(reverse("trends", args=[suite.slug]), query)
        assert response.status_code == 200
        assert_page_agrees_with_raw(response.content.decode(), suite, start, end, bucket,
                                    with_clean)


def test_csv_holds_the_table(client_for, suite, lead, today):
    records = [record(f"tests/test_a.py::test_{i}", lock="drifted") for i in range(3)]
    signals_ingest(suite=suite, body=body(records), actor="ci")
    client = client_for(lead)
    html = client.get(reverse("trends", args=[suite.slug]), {"range": "7"}).content.decode()
    _, tables = page_charts(html)
    for key in ("verdicts", "verdicts-distribution", "share", "expiring"):
        response = client.get(reverse("trends_csv", args=[suite.slug, key]), {"range": "7"})
        assert response["Content-Type"].startswith("text/csv")
        assert "attachment" in response["Content-Disposition"]
        assert list(csv.reader(io.StringIO(response.content.decode()))) == tables[key]
    assert tables["verdicts-distribution"][1] == ["fixture_drifted", "100.0", "3"]


@pytest.mark.slow
@pytest.mark.django_db
def test_demo_suite_charts_agree_with_its_raw_rows(client):
    call_command("demo")
    suite = Suite.objects.get(slug="demo")
    today = timezone.now().date()
    assert counts_from_rollups(suite) == counts_from_raw(suite)
    signed_in = client.post(reverse("login"), {"username": "lead", "password": "flakeboard-demo"})
    assert signed_in.status_code == 302
    for bucket in ("day", "week"):
        response = client.get(reverse("trends", args=["demo"]),
                              {"range": "90", "bucket": bucket, "with_clean": "1"})
        assert_page_agrees_with_raw(response.content.decode(), suite,
                                    today - timedelta(days=89), today, bucket)
    response = client.get(reverse("trends", args=["demo"]), {"range": "90"})
    html = response.content.decode()
    assert_page_agrees_with_raw(html, suite, today - timedelta(days=89), today, "day",
                                with_clean=False)
    specs, tables = page_charts(html)
    assert set(specs) == {
        "verdicts", "verdicts-cumulative", "verdicts-distribution", "budget",
        "budget-cumulative", "budget-distribution", "share", "expiring",
    }
    assert "is the next investment" in html or "comes first" in html
    figures = share_figures(suite, today)
    assert tables["share"][-1] == [
        today.isoformat(), str(round(100 * figures.share, 2)),
        str(round(100 * suite.max_quarantined_share, 2)), str(figures.quarantined),
        str(figures.size),
    ]
    open_for_gate = QuarantineEntry.objects.filter(suite=suite).for_gate().count()
    assert sum(specs["expiring"]["datasets"][0]["data"]) == open_for_gate
    overview = client.get(reverse("overview", args=["demo"])).content.decode()
    overview_specs, _ = page_charts(overview)
    assert len(overview_specs["verdicts"]["labels"]) == 30
    assert "clean" not in {d["label"] for d in overview_specs["verdicts"]["datasets"]}
    rebuilt_rows = rebuild_rollups(suite)
    assert rebuilt_rows > 0 and counts_from_rollups(suite) == counts_from_raw(suite)


# --- the quarantined share over time ----------------------------------------------------


def _brute_share(entries, nodes, day):
    """SPEC 2.2's share on ``day``, from every node and entry, the slow way."""
    window = timedelta(days=30)

    def open_on(entry):
        return entry.created_at.date() <= day and (
            entry.cleared_at is None or entry.cleared_at.date() > day
        )

    quarantined = sum(1 for e in entries
                      if open_on(e) and e.expires >= day and e.node.tier == 2)
    holding = {e.node_id for e in entries if open_on(e)}
    size = sum(1 for n in nodes
               if (n.last_seen is not None and n.first_seen <= day <= n.last_seen + window)
               or n.pk in holding)
    return quarantined, size


@st.composite
def ledger_histories(draw):
    span = 70
    sightings = draw(st.lists(st.tuples(st.integers(0, 5), st.integers(0, span)), max_size=12))
    lifetimes = st.integers(-5, 30).filter(lambda days: days != 0)
    entries = draw(st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, span), lifetimes,
                  st.one_of(st.none(), st.integers(0, 30))),
        max_size=5,
    ))
    return span, sightings, entries, draw(st.booleans())


@db_property(40)
@given(ledger_histories())
def test_share_over_time_follows_the_ledger_and_ends_on_todays_share(db, case):
    span, sightings, entries, rule = case
    today = timezone.now().date()
    first = today - timedelta(days=span)

    def at(offset):
        return datetime.combine(first + timedelta(days=offset), time(12), tzinfo=UTC)

    # Events in time order; clearing an entry is an event of its own, on its day.
    order = itertools.count()
    events = [(day, 0, next(order), "see", node) for node, day in sightings]
    events += [(day, 1, next(order), "entry", (node, life, clear))
               for node, day, life, clear in entries]
    heapq.heapify(events)
    with rolled_back():
        suite = Suite.objects.create(slug="share")
        while events:
            day, _, _, kind, what = heapq.heappop(events)
            if kind == "see":
                report_ingest(suite=suite, actor="ci", now=at(day),
                              body=body([measurement(f"tests/t.py::n{what}")]))
            elif kind == "clear":
                quarantine_clear(entry=what, note="fixed", actor="@o", now=at(day))
            else:
                node, life, clear = what
                nodeid = f"tests/t.py::n{node}"
                if QuarantineEntry.objects.filter(node__nodeid=nodeid, cleared_at=None).exists():
                    continue
                entry = quarantine_create(
                    suite=suite, nodeid=nodeid, owner="@o", evidence="ci/1", actor="@o",
                    expires=first + timedelta(days=day + life),
                    today=first + timedelta(days=day), now=at(day), imported=True,
                )
                if clear is not None and day + clear <= span:
                    heapq.heappush(events, (day + clear, -1, next(order), "clear", entry))
        if rule:
            tier_rule_add(suite=suite, glob="tests/t.py::n1", tier=0, actor="@lead")
        days = share_over_time(suite, start=first, end=today)
        assert [d.day for d in days] == [first + timedelta(days=i) for i in range(span + 1)]
        entries = list(QuarantineEntry.objects.filter(suite=suite).select_related("node"))
        nodes = list(Node.objects.filter(suite=suite))
        for point in days:
            assert (point.quarantined, point.size) == _brute_share(entries, nodes, point.day)
        figures = share_figures(suite, today)
        assert (days[-1].quarantined, days[-1].size) == (figures.quarantined, figures.size)


def test_expiring_per_week_counts_open_non_violating_entries(suite, today):
    report_ingest(suite=suite, actor="ci",
                  body=body([measurement(f"tests/t.py::n{i}") for i in range(8)]))
    yesterday = today - timedelta(days=1)
    for i, days in enumerate([-2, 0, 6, 7, 29, 3, 8]):
        quarantine_create(suite=suite, nodeid=f"tests/t.py::n{i}", owner="@o", evidence="ci/1",
                          expires=today + timedelta(days=days), actor="@o", today=yesterday,
                          imported=True)
    quarantine_clear(entry=QuarantineEntry.objects.get(node__nodeid="tests/t.py::n5"),
                     note="fixed", actor="@o")
    tier_rule_add(suite=suite, glob="tests/t.py::n6", tier=1, actor="@lead")
    expired, weeks = expiring_per_week(suite, today)
    assert expired == 1
    assert [c for _, c in weeks] == [2, 1, 0, 0, 1]
    assert weeks[1][0] == today + timedelta(days=7)


# --- range, bucket and htmx -------------------------------------------------------------


def _get(client, suite, **query):
    return client.get(reverse("trends", args=[suite.slug]), query)


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


def test_a_preset_wins_over_the_read_only_days_the_form_sends_along(client_for, suite,
                                                                    viewer, today):
    stale = {"from": "2001-01-01", "to": "2001-02-01"}
    period = _get(client_for(viewer), suite, range="7", **stale).context["period"]
    assert (period.start, period.end) == (today - timedelta(days=6), today)


def _refused(response, message):
    assert response.status_code == 400
    assert message in response.content.decode()


# (query, the words of the reason shown); days are counted back from today.
BAD_RANGES = [
    ({"range": "custom", "to": -1}, "is after today"),
    ({"from": -1}, "is after to"),
    ({"from": 5, "to": 10}, "is after to"),
    ({"from": 366}, "at most 366"),
    ({"from": "0001-01-01", "to": "0001-01-07"}, "before 2000-01-01"),
    ({"to": "9999-12-31"}, "is after today"),
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
    with django_assert_max_num_queries(15):
        _get(client, suite, range="90")
