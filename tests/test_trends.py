"""The trends page's charts: their JSON, tables and CSV carry the counts the raw rows give, on
random histories and on the demo suite; the quarantined share over time follows the ledger.
The range and bucket controls, htmx and the query count are in test_trends_range.py."""

from __future__ import annotations

import csv
import heapq
import io
import itertools
import json
import re
from collections import Counter
from datetime import UTC, datetime, time, timedelta
from html.parser import HTMLParser

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from board.demo import BIRTHS
from flakeboard.rules.trends_range import bucket_start
from ledger.models import Node, QuarantineEntry, Suite
from ledger.quarantine import quarantine_clear, quarantine_create
from ledger.selectors import share_figures
from ledger.tiers import tier_rule_add
from runs.ingest import report_ingest, signals_ingest
from runs.rollups import counts_from_raw, counts_from_rollups, rebuild_rollups
from runs.trend_counts import expiring_per_week, share_over_time
from runs.trends import CLEAN_REASONS
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
            for reason in CLEAN_REASONS[source]:
                raw.pop(reason, None)
        spec = specs.get(key)
        if not raw:
            assert spec is None
            continue
        drawn = {d["label"]: d["data"] for d in spec["datasets"]}
        assert set(drawn) == set(raw)
        for reason, data in drawn.items():
            assert data == [raw[reason][label] for label in spec["labels"]]
        # The table under the chart holds the same numbers, plus each bucket's total (and
        # per week, the days it covers).
        header, *rows = tables[key]
        first = 2 if bucket == "week" else 1
        assert header[1:first] == (["days"] if bucket == "week" else [])
        assert header[first:-1] == list(drawn) and header[-1] == "total"
        for i, row in enumerate(rows):
            assert row[0] == spec["labels"][i]
            counts = [int(cell) for cell in row[first:]]
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
        assert list(csv.reader(io.StringIO(response.getvalue().decode()))) == tables[key]
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
        "verdicts", "verdicts-cumulative", "verdicts-distribution", "after-reject", "flips",
        "budget", "budget-cumulative", "budget-distribution", "births", "share", "expiring",
        "categories",
    }
    # The demo reruns a rejected patch twice at its commit on four of these 90 days, and
    # one node flips each time.
    assert (sum(specs["after-reject"]["datasets"][0]["data"]),
            sum(specs["flips"]["datasets"][0]["data"])) == (8, 4)
    # Three pull requests added two tests each; two were flaky at birth.
    assert sum(specs["births"]["datasets"][0]["data"]) == sum(
        0 < fails < suite.new_test_runs for _, _, tests in BIRTHS for fails in tests.values())
    assert [sum(int(row[i]) for row in tables["births"][1:]) for i in (1, 2)] == [2, 6]
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
