"""A new test flaky at birth is flaky evidence (issue 32, item 4): a node whose runs in the
new-test guard both passed and failed at the commit that added it (``new_test_flaky``) is
listed on the flaky-tests page under "Flaky at birth", after the flips and before the JUnit
tests, with its report and what its runs bound; the page filters by kind of evidence; the
targets file offers it to measure until a measurement finds it within budget."""

from __future__ import annotations

from datetime import timedelta

from django.urls import reverse
from django.utils import timezone

from board.births import birth_rows
from board.targets import measure_targets
from junit.selectors import Window
from runs.ingest import report_ingest
from runs.models import Report
from runs.trend_counts import birth_counts
from tests import test_flaky_page
from tests.api_http import new_token
from tests.helpers import body, measurement
from tests.test_flaky_flips import FLIPPED, JUNIT, flip, junit_flake, prefilled
from tests.test_flaky_page import shown
from tests.test_trends import page_charts
from tests.test_trends_retries import today

BORN = "tests/test_a.py::test_born_flaky"  # as the JUnit files below name it
CLEAN = "tests/test_new.py::test_born_clean"
flaky_page = test_flaky_page.flaky_page  # a fixture: the page as its owner reads it


def born(suite, *, node=BORN, commit="pr-1", n=30, fails=6, days_ago=0,
         branch="") -> Report:
    """The guard's report at ``commit``: ``node`` new there, ``fails`` of ``n`` runs failed
    (flaky at birth when 0 < fails < n), beside a new test that passed all its runs."""
    rows = [measurement(node, n=n, fails=fails, new_test=True),
            measurement(CLEAN, n=30, fails=0, new_test=True)]
    query = {"commit": commit, **({"branch": branch} if branch else {})}
    return report_ingest(suite=suite, body=body(rows), actor="ci", query=query,
                         now=timezone.now() - timedelta(days=days_ago)).upload


def test_a_new_test_flaky_at_birth_is_listed_with_its_report_and_bound(suite, flaky_page):
    report = born(suite, commit="abc1234def")
    assert report.reason == "new_test_flaky"
    response = flaky_page()
    assert shown(response) == [BORN]  # the clean new test is not flaky evidence
    (row,) = response.context["rows"]
    assert (row.birth.report, row.birth.commit, row.birth.n, row.birth.fails) == (
        report.pk, "abc1234def", 30, 6)
    html = response.content.decode()
    assert "Flaky at birth" in html
    assert "1 flaky test in the last 30 days (1 flaky at birth)" in html
    assert "new: 6/30 failed, rate ≤ 37.3% at 95%" in html
    assert reverse("report", args=[suite.slug, report.pk]) in html


def test_births_come_after_flips_and_before_junit_each_node_once(suite, flaky_page):
    born(suite)
    junit_flake(suite, JUNIT, times=3)
    junit_flake(suite, BORN, commit="j2", times=5)  # later flaky in JUnit too: listed once
    flip(suite)
    rows = flaky_page().context["rows"]
    assert [(row.node.nodeid, row.heading) for row in rows] == [
        (FLIPPED, "Flipped between gate attempts"), (BORN, "Flaky at birth"),
        (JUNIT, "Flaky in JUnit files")]
    assert rows[1].figures.flaky_failures == 5  # its JUnit figures still show


def test_the_page_filters_by_kind_of_evidence(suite, flaky_page):
    born(suite, node=FLIPPED, commit="pr-0")  # flaky at birth, and later it flipped
    born(suite)
    junit_flake(suite, JUNIT)
    flip(suite)
    assert shown(flaky_page()) == [FLIPPED, BORN, JUNIT]
    # Each kind alone; a test that flipped and was flaky at birth is under both.
    assert shown(flaky_page(evidence="birth")) == [BORN, FLIPPED]
    assert shown(flaky_page(evidence="flipped")) == [FLIPPED]
    assert shown(flaky_page(evidence="junit")) == [JUNIT]
    assert shown(flaky_page(evidence="nonsense")) == [FLIPPED, BORN, JUNIT]  # ignored
    empty = flaky_page(evidence="birth", q="nothing-like-it")
    assert "No flaky test matches these filters" in empty.content.decode()


def test_a_birth_older_than_the_window_or_on_another_branch_is_not_listed(suite, flaky_page,
                                                                        today):
    born(suite, days_ago=40, branch="feature")
    assert shown(flaky_page()) == []
    assert shown(flaky_page(days=90)) == [BORN]
    # The page offers the branches of JUnit files; a report's branch counts as theirs.
    assert birth_rows(suite, Window(today, 90, "feature")).count() == 1
    assert birth_rows(suite, Window(today, 90, "main")).count() == 0


def test_quarantine_of_a_birth_is_prefilled_from_its_runs_and_report(suite, flaky_page):
    report = born(suite)
    *counts, evidence = prefilled(flaky_page())
    assert counts == [BORN, "30", "6"]
    assert evidence.endswith(reverse("report", args=[suite.slug, report.pk]))


def test_the_targets_file_offers_a_birth_until_it_is_measured_within_budget(suite, today):
    born(suite)
    junit_flake(suite, JUNIT, times=3)
    flip(suite)
    assert measure_targets(suite, today) == [FLIPPED, BORN, JUNIT]
    report_ingest(suite=suite, body=body([measurement(BORN, n=400, fails=0)]), actor="ci",
                  query={"commit": "fix-1"})
    assert measure_targets(suite, today) == [FLIPPED, JUNIT]


def test_pages_across_the_three_kinds_take_a_bounded_number_of_queries(
        suite, flaky_page, django_assert_max_num_queries):
    """Flips, births and JUnit tests on one page, and a page of the last two: each reads
    only the parts it shows: two queries for the births, beside a page of flips and JUnit;
    five diagnose the page's tests."""
    kinds = []
    for i in range(12):
        born(suite, node=f"tests/test_new.py::test_{i}", commit=f"pr-{i}")
    for i in range(20):
        junit_flake(suite, f"tests/test_a.py::test_{i}", commit=f"j{i}")
    flip(suite)
    for page, most in ((1, 19), (2, 17)):
        with django_assert_max_num_queries(most):
            rows = flaky_page(page=page).context["rows"]
        kinds += [(row.flip is not None, row.birth is not None) for row in rows]
        assert rows[0].heading  # each page says which group it begins in
    assert kinds == [(True, False)] + [(False, True)] * 12 + [(False, False)] * 20


# --- the leads' trends --------------------------------------------------------------------


def test_the_trends_chart_new_tests_flaky_at_birth_each_once(client_for, lead, suite, board):
    born(suite, days_ago=2)  # BORN flaky at birth; CLEAN measured clean
    born(suite, days_ago=2)  # a rerun at the same commit: still one test each
    born(suite, node="tests/test_new.py::test_later", commit="pr-2", days_ago=0)
    start, end = today() - timedelta(days=6), today()
    assert birth_counts(suite, start=start, end=end) == {
        "buckets": [(start + timedelta(days=i)).isoformat() for i in range(7)],
        "flaky": [0, 0, 0, 0, 1, 0, 1], "measured": [0, 0, 0, 0, 2, 0, 1]}
    weekly = birth_counts(suite, start=start, end=end, bucket="week")
    assert (sum(weekly["flaky"]), sum(weekly["measured"])) == (2, 3)
    html = client_for(lead).get(reverse("trends", args=[suite.slug]), {"range": "7"}
                                ).content.decode()
    specs, tables = page_charts(html)
    assert [d["label"] for d in specs["births"]["datasets"]] == ["new tests flaky at birth"]
    header, *rows = tables["births"]
    assert header == ["Day", "new tests flaky at birth", "new tests measured at birth"]
    assert [(int(f), int(m)) for _, f, m in rows] == [(1, 2), (0, 0), (1, 1)]  # from the first
    # A new test's clean runs are no problem: hidden with the other clean codes.
    budget = [d["label"] for d in specs["budget"]["datasets"]]
    assert "new_test_flaky" in budget and "new_test_clean" not in budget
    shown = page_charts(client_for(lead).get(reverse("trends", args=[suite.slug]), {
        "range": "7", "with_clean": "1"}).content.decode())[0]
    assert "new_test_clean" in [d["label"] for d in shown["budget"]["datasets"]]
    answer = board.trends(suite.slug, new_token(suite, "read"),
                          query={"source": "reports", "from": start.isoformat()}).json
    assert answer["births"] == {"flaky": [0, 0, 0, 0, 1, 0, 1], "measured": [0, 0, 0, 0, 2, 0, 1]}
    assert board.trends(suite.slug, new_token(suite, "read")).json["births"] is None


def test_a_range_without_births_says_so(client_for, lead, suite):
    report_ingest(suite=suite, body=body([measurement(CLEAN, n=400)]), actor="ci")
    html = client_for(lead).get(reverse("trends", args=[suite.slug]), {"range": "7"}
                                ).content.decode()
    specs, _ = page_charts(html)
    assert "births" not in specs
    assert "No new test was flaky at birth in this range." in html
