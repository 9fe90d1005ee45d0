"""A node's page: its measurements against the budget as a chart and a table, its verdicts
over time and its quarantine history."""

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from flakeboard import rules
from ledger.quarantine import quarantine_clear, quarantine_create
from ledger.tiers import tier_rule_add
from runs.ingest import report_ingest, signals_ingest
from tests.helpers import body, measurement, record

NODE = "tests/unit/test_pay.py::TestRefund::test_retry[eu-west]"


@pytest.fixture
def history(suite, today):
    start = datetime.combine(today - timedelta(days=5), datetime.min.time(), tzinfo=UTC)
    others = [measurement(f"t.py::t{i}") for i in range(40)]
    for day, fails in enumerate([0, 2, 9, 4, 1]):
        report_ingest(suite=suite, body=body([*others, measurement(NODE, fails=fails)]),
                      actor="ci", now=start + timedelta(days=day))
        records = [record(NODE, prop="fail" if day == 2 else "pass")]
        signals_ingest(suite=suite, body=body({"records": records, "patch": f"p{day}"}),
                       actor="ci", now=start + timedelta(days=day, hours=2))
    old = quarantine_create(suite=suite, nodeid=NODE, owner="@sam", evidence="ci/run-1",
                            expires=today + timedelta(days=5), actor="@sam", today=today)
    quarantine_clear(entry=old, note="Fixed the retry loop.", actor="@sam")
    current = quarantine_create(suite=suite, nodeid=NODE, owner="@finley", evidence="ci/run-2",
                                expires=today + timedelta(days=20), actor="@finley", today=today)
    return {"old": old, "current": current}


def node_url(suite, nodeid=NODE):
    return reverse("node", args=[suite.slug, nodeid])


def test_node_ids_with_slashes_and_colons_resolve(client_for, viewer, suite, history):
    url = node_url(suite)
    assert "/nodes/tests/unit/test_pay.py::TestRefund::test_retry%5Beu-west%5D/" in url
    response = client_for(viewer).get(url)
    assert response.status_code == 200 and NODE.encode() in response.content


def test_an_unknown_node_is_not_found(client_for, viewer, suite):
    assert client_for(viewer).get(node_url(suite, "tests/nope.py::test_x")).status_code == 404


def test_the_chart_data_and_the_same_numbers_in_a_table(client_for, viewer, suite, history):
    html = client_for(viewer).get(node_url(suite)).content.decode()
    assert '<canvas class="chart" data-chart-source="node-chart-data"' in html
    data = re.search(r'<script id="node-chart-data" type="application/json">(.*?)</script>',
                     html, re.S)
    chart = json.loads(data.group(1))
    assert chart["type"] == "line" and len(chart["labels"]) == 5
    assert [d["label"] for d in chart["datasets"]] == ["upper95", "budget"]
    assert chart["labels"] == sorted(chart["labels"])  # oldest first
    upper = chart["datasets"][0]["data"]
    assert upper == [round(rules.upper95(fails, 200), 4) for fails in (0, 2, 9, 4, 1)]
    assert chart["datasets"][1]["data"] == [0.02] * 5
    for value in upper:
        assert f'<td class="num">{value:.4f}</td>' in html
    assert html.count('<td class="num">0.02</td>') == 5
    assert html.count('<td class="num">200</td>') >= 5


def test_chart_scripts_are_included_on_the_node_page_only(client_for, viewer, suite, history):
    client = client_for(viewer)
    node_page = client.get(node_url(suite)).content.decode()
    assert "vendor/chartjs/chart.umd.min.js" in node_page and "js/charts.js" in node_page
    ledger_page = client.get(reverse("ledger", args=[suite.slug])).content.decode()
    assert "chart.umd.min.js" not in ledger_page


def test_verdicts_over_time(client_for, viewer, suite, history):
    html = client_for(viewer).get(node_url(suite)).content.decode()
    verdicts = html[html.index('id="verdicts-heading"'):]
    assert verdicts.count('<span class="badge v-') == 5
    assert verdicts.count("REJECT") == 1 and "property_fail" in verdicts


def test_quarantine_history(client_for, viewer, suite, history):
    html = client_for(viewer).get(node_url(suite)).content.decode()
    section = html[html.index('id="quarantine-heading"'):html.index('id="verdicts-heading"')]
    assert '<span class="badge st-active">Active</span>' in section
    assert '<span class="badge st-cleared">Cleared</span>' in section
    assert "Fixed the retry loop." in section and "@finley" in section and "@sam" in section
    current = reverse("entry", args=[suite.slug, history["current"].pk])
    assert f'<a href="{current}">entry {history["current"].pk}</a>' in html  # in the header too


def test_the_tier_and_the_rule_that_set_it(client_for, owner, suite, history):
    tier_rule_add(suite=suite, glob="tests/unit/*", tier=1, actor="@lea")
    html = client_for(owner).get(node_url(suite)).content.decode()
    assert "tier 1</span>" in html and "by the rule <code>tests/unit/*</code>" in html
    assert '<span class="badge st-tier_violation">Tier violation</span>' in html


def test_an_unquarantined_tier_two_node_offers_quarantine(client_for, owner, viewer, suite,
                                                          history):
    url = node_url(suite, "t.py::t1")
    html = client_for(owner).get(url).content.decode()
    assert f'{reverse("entry_new", args=[suite.slug])}?node=t.py%3A%3At1' in html
    assert "never been quarantined" in html and "No verdict batch has named this node" in html
    as_viewer = client_for(viewer).get(url).content.decode()
    assert reverse("entry_new", args=[suite.slug]) not in as_viewer


def test_the_latest_panel_is_a_partial_for_htmx_only(client_for, viewer, suite, history):
    client = client_for(viewer)
    panel = client.get(node_url(suite), {"panel": "latest"}, headers={"HX-Request": "true"})
    assert b"<html" not in panel.content
    assert len(re.findall(rb'<tr class="status-', panel.content)) == 5
    assert b"<html" in client.get(node_url(suite), {"panel": "latest"}).content


def test_the_node_page_makes_a_bounded_number_of_queries(
    client_for, viewer, suite, history, django_assert_max_num_queries
):
    client = client_for(viewer)
    with django_assert_max_num_queries(12):
        client.get(node_url(suite))
