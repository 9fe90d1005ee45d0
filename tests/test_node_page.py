"""A node's page: its measurements against the budget as a chart and a table, its verdicts
over time and its quarantine history."""

import json
import re
from datetime import UTC, datetime, timedelta
from html import unescape as html_unescape

from django.urls import reverse

from flakeboard import rules
from ledger.quarantine import quarantine_clear, quarantine_create
from ledger.tiers import tier_rule_add
from runs.ingest import report_ingest, signals_ingest
from tests.helpers import body, measurement, node_page, record
from tests.test_flaky_page import flake
from tests.world import module_world

NODE = "tests/unit/test_pay.py::TestRefund::test_retry[eu-west]"


def add_history(suite, today):
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


# history: the node's five days of reports and batches, and its entries: the old one cleared, the
# current one open.
build_world, history = module_world("history", add_history)


def node_url(suite, nodeid=NODE):
    return node_page(suite.slug, nodeid)


def test_a_node_page_is_addressed_by_its_key(client_for, viewer, suite, history):
    url = node_url(suite)
    assert re.fullmatch(rf"/suites/{suite.slug}/nodes/[0-9a-f]{{32}}/", url)
    response = client_for(viewer).get(url)
    assert response.status_code == 200 and NODE.encode() in response.content


# Node ids a browser would rewrite or cut if they were a path: dot segments, empty
# segments, a query, a fragment, percent signs; and real ids from click, jinja2, packaging.
AWKWARD = [
    "tests/test_io.py::test_read[a/../../../../../../ledger]",
    "tests/test_io.py::test_read[./x]",
    "tests/test_io.py::test_read[..]",
    "tests/test_io.py::test_read[.]",
    "tests//test_io.py::test_read[//host/share]",
    "tests/test_io.py::test_read[a?b=c]",
    "tests/test_io.py::test_read[#frag]",
    "tests/test_io.py::test_read[100%]",
    "tests/test_io.py::test_read[%2e%2e%2f]",
    "tests/test_utils.py::test_expand_args[~/*.py]",
    "tests/test_api.py::test_markup_leaks[]",
    "tests/test_version.py::test_valid_versions[1.0.dev456]",
    "tests/test_版本.py::test_名前[😀]",
]


def test_awkward_node_ids_are_reached_from_the_report_page(client_for, viewer, suite):
    """Every node link on the report page leads to that node's own page."""
    outcome = report_ingest(suite=suite, body=body([measurement(n) for n in AWKWARD]),
                            actor="ci")
    client = client_for(viewer)
    html = client.get(reverse("report", args=[suite.slug, outcome.upload.pk])).content.decode()
    links = [(href, shown.replace("<wbr>", "")) for href, shown in re.findall(
        r'<td class="node"><a href="([^"]+)"><code>(.*?)</code>', html)]
    assert len(links) == len(AWKWARD)
    for href, shown in links:
        assert re.fullmatch(rf"/suites/{suite.slug}/nodes/[0-9a-f]{{32}}/", href)
        page = client.get(href)
        assert page.status_code == 200, shown
        title = re.search(r"<h1[^>]*>(.*?)</h1>", page.content.decode(), re.S).group(1)
        assert html_unescape(shown) in html_unescape(title)
    assert {html_unescape(shown) for _, shown in links} == set(AWKWARD)


def test_the_earlier_address_by_node_id_redirects(client_for, viewer, suite, history):
    client = client_for(viewer)
    old = reverse("node_by_id", args=[suite.slug, NODE]) + "?panel=latest"
    response = client.get(old)
    assert response.status_code == 301
    assert response["Location"] == node_url(suite) + "?panel=latest"
    missing = reverse("node_by_id", args=[suite.slug, "tests/nope.py::test_x"])
    assert client.get(missing).status_code == 404


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
    page = client.get(node_url(suite)).content.decode()
    assert "vendor/chartjs/chart.umd.min.js" in page and "js/charts.js" in page
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
    # The session, the user, the suite, the viewer's role and the node; its measurements
    # (paged from that read), entries and tier rules; its verdicts (counted, then a page);
    # its JUnit summary (two) and latest results; whether it is flaky on the flaky-tests
    # page; its diagnosis (the commits it was measured at, CI's facts).
    with django_assert_max_num_queries(16):
        client.get(node_url(suite))


# B10's goal for the node page of a flaky test is 12 queries, as a staff user; a viewer's
# role is one more.
B10_NODE_QUERIES = 12 + 1


def test_a_node_flaky_in_junit_files_takes_b10s_queries(
    client_for, viewer, suite, django_assert_max_num_queries
):
    """Its JUnit history says it is flaky and its page read its latest measurement: the
    diagnosis neither counts the flaky-tests page nor reads the node again."""
    ci_only, measured = "tests/test_a.py::test_ci_only", "tests/test_a.py::test_measured"
    report_ingest(suite=suite, body=body([measurement(measured, fails=2)]), actor="ci")
    for commit, nodeid in (("c1", ci_only), ("c2", measured)):
        flake(suite, nodeid, commit=commit, message="timeout after 2.5s")
    client = client_for(viewer)
    for nodeid, most in ((ci_only, B10_NODE_QUERIES),  # as B10's: no measurement
                         (measured, B10_NODE_QUERIES + 1)):  # the commits it was measured at
        with django_assert_max_num_queries(most):
            html = client.get(node_url(suite, nodeid)).content.decode()
        assert "<dt>Flaky failures</dt><dd>1</dd>" in html and "diagnosis-head" in html
