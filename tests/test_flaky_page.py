"""The flaky-tests page (issue 17, Show): the tests ranked by flaky failures over a window,
each with its figures, top signatures, last 30 days and ledger state, filtered by window,
branch and text; its Quarantine link prefilled from the passive counts, and its Measure
button marking the node for the targets file. Read from the rollups, in a bounded number
of queries whatever the page's size."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.urls import reverse
from django.utils import timezone

from flakeboard import rules
from junit.ingest import junit_ingest
from junit.models import NodeDay, SignatureDay
from junit.rules import FlakyFigures
from junit.selectors import Spark
from junit.summary import rebuild_summary
from ledger.measure_targets import marked_nodeids
from ledger.models import AuditEvent, MeasureTarget
from ledger.quarantine import quarantine_create
from ledger.tiers import tier_rule_add
from runs.ingest import report_ingest
from tests.helpers import body, measurement, node_page
from tests.junit_files import junit_xml

A, B, C = ("tests/test_a.py::test_a", "tests/test_a.py::test_b", "tests/test_a.py::test_c")


def case(nodeid: str, outcome: str, message: str = "timeout after 2.5s") -> tuple:
    return ("tests.test_a", nodeid.rpartition("::")[2], outcome, message)


def flake(suite, nodeid: str, *, commit: str, branch: str = "main", message: str = "x 1"):
    """One job of ``commit`` in which ``nodeid`` failed, was rerun and passed."""
    xml = junit_xml(case(nodeid, "failed", message), case(nodeid, "passed"))
    junit_ingest(suite=suite, body=xml, actor="ci",
                 query={"commit": commit, "branch": branch, "job": "py3.12"})


def fail(suite, nodeid: str, *, commit: str):
    junit_ingest(suite=suite, body=junit_xml(case(nodeid, "failed")), actor="ci",
                 query={"commit": commit, "branch": "main", "job": "py3.12"})


@pytest.fixture
def flaky_page(client_for, owner, suite):
    client = client_for(owner)

    def get(**query):
        return client.get(reverse("flaky", args=[suite.slug]), query)
    return get


def shown(response) -> list[str]:
    """The node ids of the page's rows, in order."""
    return [row.node.nodeid for row in response.context["rows"]]


def test_tests_are_ranked_by_flaky_failures_with_their_figures(suite, flaky_page):
    for commit in ("c1", "c2"):
        flake(suite, A, commit=commit, message="timeout after 2.5s")
    flake(suite, B, commit="c3", message="lock at 0x7f3a held")
    fail(suite, C, commit="c4")  # failing, never flaky: not on the page
    response = flaky_page()
    assert shown(response) == [A, B]
    top = response.context["rows"][0]
    assert top.figures == FlakyFigures(runs=4, failures=2, flaky_failures=2, flaky_commits=2)
    assert top.figures.rate == 0.5
    assert top.figures.upper95 == rules.upper95(2, 4)
    assert top.signatures == [("timeout after <n>s", 2)]
    assert top.spark.counts[-1] == 2 and sum(top.spark.counts) == 2
    html = response.content.decode()
    assert "2 flaky tests in the last 30 days." in html
    assert "timeout after &lt;n&gt;s" in html and "1 day flaky" in html
    # The sparkline's numbers are in its accessible name as well as beside it.
    assert f"{top.spark.spoken}" in html and "Quarantine<span" in html


def test_the_window_branch_and_text_filters(suite, flaky_page):
    flake(suite, A, commit="c1")
    flake(suite, B, commit="c2", branch="feature/x")
    NodeDay.objects.filter(node__nodeid=A).update(day=NodeDay.objects.get(
        node__nodeid=A).day - timedelta(days=10))
    SignatureDay.objects.filter(node__nodeid=A).update(day=SignatureDay.objects.get(
        node__nodeid=A).day - timedelta(days=10))
    rebuild_summary(suite, timezone.now().date())  # the rollups forged: summed again
    assert shown(flaky_page()) == [A, B]
    assert shown(flaky_page(days=7)) == [B]
    assert shown(flaky_page(branch="feature/x")) == [B]
    assert shown(flaky_page(q="::TEST_A")) == [A]  # case-insensitive, anywhere in the id
    assert shown(flaky_page(days="banana", branch="no-such")) == [A, B]  # ignored, not an error
    empty = flaky_page(q="nothing").content.decode()
    assert "No flaky test matches these filters." in empty


def test_an_empty_suite_says_how_to_send_junit_files(suite, flaky_page):
    html = flaky_page().content.decode()
    assert "No test was seen flaky in the last 30 days." in html
    assert "flakeboard_ci.py junit" in html


def test_quarantine_is_prefilled_from_the_passive_counts_with_the_page_as_evidence(
        suite, flaky_page, client_for, owner):
    flake(suite, A, commit="c1")
    row = flaky_page().context["rows"][0]
    query = parse_qs(row.quarantine_query)
    assert (query["node"], query["n"], query["fails"]) == ([A], ["2"], ["1"])
    evidence = urlsplit(query["evidence"][0])
    assert evidence.path == reverse("flaky", args=[suite.slug])
    assert parse_qs(evidence.query) == {"q": [A], "days": ["30"]}
    form = client_for(owner).get(reverse("entry_new", args=[suite.slug]) + "?"
                                 + row.quarantine_query).context["form"]
    assert (form["node"].value(), form["n"].value(), form["fails"].value()) == (A, "2", "1")
    assert form["evidence"].value() == query["evidence"][0]


def test_a_quarantined_or_never_quarantinable_test_offers_no_quarantine(suite, flaky_page, today):
    # A test set the share can hold one entry of (the known nodes: the flakes' JUnit is a
    # feature branch's, which never sizes it).
    report_ingest(suite=suite, body=body([measurement(f"tests/test_{i}.py::test_ok")
                                          for i in range(40)]), actor="ci")
    flake(suite, A, commit="c1", branch="feature")
    flake(suite, B, commit="c2", branch="feature")
    quarantine_create(suite=suite, nodeid=A, owner="@finley", expires=today + timedelta(days=5),
                      evidence="ci/1", actor="@finley", today=today)
    tier_rule_add(suite=suite, glob="tests/test_a.py::test_b", tier=0, actor="@lea")
    rows = {row.node.nodeid: row for row in flaky_page().context["rows"]}
    assert rows[A].entry is not None and not rows[A].can_quarantine
    assert rows[B].entry is None and not rows[B].can_quarantine
    html = flaky_page().content.decode()
    assert "tier 0: never quarantined" in html and "@finley" in html


def test_measure_marks_the_node_with_an_audit_event_and_unmark_undoes_it(
        suite, client_for, owner):
    flake(suite, A, commit="c1")
    url = reverse("flaky_measure", args=[suite.slug])
    client = client_for(owner)
    back = reverse("flaky", args=[suite.slug]) + "?days=7"
    response = client.post(url, {"node": A, "marked": "1", "next": back})
    assert response.status_code == 302 and response["Location"] == back
    assert marked_nodeids(suite) == [A]
    event = AuditEvent.objects.latest("pk")
    assert (event.action, event.actor, event.after) == ("target", "@finley", {"measure": A})
    # Marking again changes nothing and writes nothing.
    client.post(url, {"node": A, "marked": "1"})
    assert AuditEvent.objects.filter(action="target").count() == 1
    client.post(url, {"node": A, "next": "https://elsewhere.example/"})
    assert marked_nodeids(suite) == []
    assert AuditEvent.objects.latest("pk").before == {"measure": A}


def test_measure_over_htmx_answers_the_row_again(suite, client_for, owner):
    flake(suite, A, commit="c1")
    response = client_for(owner).post(
        reverse("flaky_measure", args=[suite.slug]), {"node": A, "marked": "1", "days": "30"},
        headers={"HX-Request": "true"})
    html = response.content.decode()
    assert response.status_code == 200 and html.lstrip().startswith("<tr")
    assert "measuring" in html and "Unmark" in html and "marked to measure" in html


def test_measure_refuses_a_node_the_suite_does_not_know(suite, client_for, owner):
    response = client_for(owner).post(reverse("flaky_measure", args=[suite.slug]),
                                      {"node": "tests/nope.py::test_x", "marked": "1"},
                                      follow=True)
    assert "is not a node of this suite" in response.content.decode()
    assert not MeasureTarget.objects.exists()


def test_a_full_page_takes_a_bounded_number_of_queries(suite, flaky_page,
                                                       django_assert_max_num_queries):
    cases = []
    for i in range(30):
        cases += [case(f"tests/test_a.py::test_{i}", "rerun"),
                  case(f"tests/test_a.py::test_{i}", "passed")]
    junit_ingest(suite=suite, body=junit_xml(*cases), actor="ci",
                 query={"commit": "c1", "branch": "main", "job": "j"})
    with django_assert_max_num_queries(13):  # three of them diagnose the page's tests
        response = flaky_page()
    assert len(response.context["rows"]) == 25
    assert response.context["page"].paginator.count == 30


@pytest.mark.parametrize(("counts", "spoken"), [
    ([0] * 30, "no flaky failures in the last 30 days"),
    ([0] * 28 + [3, 1], "Nov 29: 3, Nov 30: 1"),
])
def test_the_sparkline_speaks_its_numbers(counts, spoken, today):
    since = today.replace(year=2026, month=11, day=1)
    spark = Spark(since, counts)
    assert spark.spoken == spoken
    bars = spark.bars()
    assert [bar["height"] for bar in bars if bar["height"]] == (
        [20, 7] if any(counts) else [])
    # The chart draws a bar for each day with a count, at its place, and none for the rest.
    assert spark.rects == ('<rect x="84" y="0" width="2" height="20"/>'
                           '<rect x="87" y="13" width="2" height="7"/>' if any(counts) else "")


# --- beside the page: the node page, the overview's tile, the settings ------------------


def test_the_node_page_shows_its_passive_history(suite, client_for, owner):
    flake(suite, A, commit="c1", message="timeout after 2.5s")
    html = client_for(owner).get(node_page(suite.slug, A)).content.decode()
    section = html[html.index('id="passive-heading"'):html.index('id="quarantine-heading"')]
    assert "<dt>Flaky failures</dt><dd>1</dd>" in section
    assert "<dt>Runs</dt><dd>2</dd>" in section
    assert "timeout after &lt;n&gt;s" in section and "c1" in section
    assert '<span class="badge flag">flaky</span>' in section


def test_a_node_never_in_a_junit_file_says_so(suite, client_for, owner):
    report_ingest(suite=suite, body=body([measurement(A)]), actor="ci")
    html = client_for(owner).get(node_page(suite.slug, A)).content.decode()
    assert "No JUnit file has named this node in the last 30 days." in html


def test_the_overview_counts_the_tests_flaky_this_week(suite, client_for, owner):
    flake(suite, A, commit="c1")
    flake(suite, B, commit="c2")
    NodeDay.objects.filter(node__nodeid=B).update(day=NodeDay.objects.get(
        node__nodeid=B).day - timedelta(days=7))  # eight days ago: last week
    rebuild_summary(suite, timezone.now().date())  # the rollups forged: summed again
    html = client_for(owner).get(reverse("overview", args=[suite.slug])).content.decode()
    tile = html[html.index(f'href="{reverse("flaky", args=[suite.slug])}?days=7"'):]
    figure = '<span class="figure">1</span> flaky test in the last 7 days'
    assert tile.split("</a>")[0].count(figure) == 1


def test_the_infrastructure_share_is_set_in_the_settings_and_audited(suite, client_for, lead):
    client = client_for(lead)
    url = reverse("settings_junit", args=[suite.slug])
    refused = client.post(url, {"junit_infrastructure_share": "180"}, follow=True)
    assert "less than or equal to 100" in refused.content.decode()
    suite.refresh_from_db()
    assert suite.junit_infrastructure_share == 0.8
    response = client.post(url, {"junit_infrastructure_share": "60"}, follow=True)
    assert "more than 60% of its tests failing" in response.content.decode()
    suite.refresh_from_db()
    assert suite.junit_infrastructure_share == 0.6
    event = AuditEvent.objects.latest("pk")
    assert (event.before, event.after) == ({"junit_infrastructure_share": 0.8},
                                           {"junit_infrastructure_share": 0.6})
    assert "60%" in client.get(reverse("settings", args=[suite.slug])).content.decode()
