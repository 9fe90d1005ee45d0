"""A flip is flaky evidence (SPEC 2.4a, issue 29 item 3): a node that failed in one attempt
of the gate and passed in another at the same patch and commit is listed on the Flaky
tests page, with the commit and the batch that hold the flip, and in the targets file, as
a JUnit flip is; both put flips first. A node that failed in every attempt, or passed in
every one, did not flip; a flip older than the window is not listed."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs

from django.urls import reverse
from django.utils import timezone

from board.targets import measure_targets
from ledger.measure_targets import measure_target_set
from runs.ingest import report_ingest, signals_ingest
from runs.models import VerdictBatch
from tests import test_flaky_page
from tests.api_http import API
from tests.helpers import body, measurement, record
from tests.test_flaky_page import shown
from tests.test_measure_targets import flake

# The JUnit files below name tests of tests/test_a.py, as their class tests.test_a says.
FLIPPED, FAILING, PASSING = (
    "tests/test_a.py::test_flips", "tests/test_a.py::test_fails", "tests/test_a.py::test_ok")
JUNIT = "tests/test_a.py::test_junit"
flaky_page = test_flaky_page.flaky_page  # a fixture: the page as its owner reads it


def junit_flake(suite, nodeid=JUNIT, *, commit="j1", times=1):
    """``times`` jobs of ``commit`` in which ``nodeid`` failed, was rerun and passed."""
    flake(suite, nodeid, commit=commit, times=times)


def attempt(suite, records, *, patch="p-1", commit="c1", days_ago=0) -> VerdictBatch:
    """One attempt of the gate at ``patch`` and ``commit``, uploaded ``days_ago``."""
    outcome = signals_ingest(
        suite=suite, actor="ci", now=timezone.now() - timedelta(days=days_ago),
        body=body({"patch": patch, "commit": commit, "records": records}))
    return outcome.upload


def flip(suite, *, commit="c1", days_ago=0) -> VerdictBatch:
    """FLIPPED fails, then passes; FAILING fails both times; PASSING passes both times.
    The second attempt, which holds the flip."""
    attempt(suite, [record(FLIPPED, "fail"), record(FAILING, "fail"), record(PASSING)],
            commit=commit, days_ago=days_ago)
    return attempt(suite, [record(FLIPPED), record(FAILING, "fail"), record(PASSING)],
                   commit=commit, days_ago=days_ago)


# --- the flaky-tests page ---------------------------------------------------------------


def test_a_node_that_flipped_is_listed_with_its_commit_and_batch(suite, flaky_page):
    batch = flip(suite, commit="abc1234def")
    response = flaky_page()
    assert shown(response) == [FLIPPED]  # failing in every attempt, or passing: no flip
    (row,) = response.context["rows"]
    assert (row.flip.commit, row.flip.batch, row.flip.commits) == ("abc1234def", batch.pk, 1)
    assert (row.flip.attempts.failed_in, row.flip.attempts.passed_in) == ((1,), (2,))
    html = response.content.decode()
    link = reverse("batch", args=[suite.slug, batch.pk])
    assert "Flipped between gate attempts on" in html
    assert (f'at commit <code title="abc1234def">abc1234def</code> '
            f'(<a href="{link}">batch {batch.pk}</a>)') in html
    assert "failed in attempt 1, passed in attempt 2." in html
    assert "1 flaky test in the last 30 days (1 flipped between gate attempts)." in html
    assert html.count("not in JUnit files") == 1  # its JUnit column, once


def test_flips_come_first_then_the_junit_ranking_each_node_once(suite, flaky_page):
    junit_flake(suite, JUNIT, times=3)
    junit_flake(suite, FLIPPED, commit="j2")  # flaky in a JUnit file too
    flip(suite)
    response = flaky_page()
    assert shown(response) == [FLIPPED, JUNIT]
    first, second = response.context["rows"]
    assert first.flip is not None and first.figures.flaky_failures == 1
    assert second.flip is None and second.figures.flaky_failures == 3
    assert (first.heading, second.heading) == ("Flipped between gate attempts",
                                                "Flaky in JUnit files")
    html = response.content.decode()
    assert html.count('<th colspan="9" scope="colgroup">') == 2
    assert response.context["page"].paginator.count == 2


def test_a_flip_older_than_the_window_or_on_a_filtered_branch_is_not_listed(suite, flaky_page):
    flip(suite, commit="old", days_ago=40)
    assert shown(flaky_page()) == []
    assert shown(flaky_page(days=90)) == [FLIPPED]
    junit_flake(suite, JUNIT)
    flip(suite, commit="new")
    # A batch names no branch: a branch's list holds JUnit evidence alone.
    assert shown(flaky_page(branch="main")) == [JUNIT]
    assert shown(flaky_page(q="_FLIPS")) == [FLIPPED]


def test_a_flip_at_two_commits_names_the_latest(suite, flaky_page):
    flip(suite, commit="c1", days_ago=2)
    latest = flip(suite, commit="c2")
    (row,) = flaky_page().context["rows"]
    assert (row.flip.commit, row.flip.batch, row.flip.other_commits) == ("c2", latest.pk, 1)
    assert "; also at 1 other commit." in flaky_page().content.decode()


def test_a_later_attempt_that_leaves_the_node_out_still_holds_its_flip(suite, flaky_page):
    flip(suite)
    third = attempt(suite, [record(PASSING)])
    (row,) = flaky_page().context["rows"]
    assert (row.node.nodeid, row.flip.batch) == (FLIPPED, third.pk)


def prefilled(page) -> tuple[str, str, str, str]:
    """The quarantine form's node, runs, failures and evidence, as the page's one row
    fills them."""
    (row,) = page.context["rows"]
    query = parse_qs(row.quarantine_query)
    return query["node"][0], query["n"][0], query["fails"][0], query["evidence"][0]


def test_quarantine_of_a_flip_is_prefilled_from_its_attempts_and_batch(suite, flaky_page):
    batch = flip(suite)
    *counts, evidence = prefilled(flaky_page())
    assert counts == [FLIPPED, "2", "1"]
    assert evidence.endswith(reverse("batch", args=[suite.slug, batch.pk]))


def test_measure_over_htmx_answers_the_flipped_row_again(suite, client_for, owner):
    flip(suite)
    response = client_for(owner).post(
        reverse("flaky_measure", args=[suite.slug]), {"node": FLIPPED, "marked": "1"},
        headers={"HX-Request": "true"})
    html = response.content.decode()
    assert html.lstrip().startswith("<tr") and "colgroup" not in html
    assert "Flipped between gate attempts" in html and "Unmark" in html


def test_a_page_with_flips_takes_a_bounded_number_of_queries(
        suite, flaky_page, django_assert_max_num_queries):
    for i in range(20):
        junit_flake(suite, f"tests/test_a.py::test_{i}", commit=f"j{i}")
    # Half the nodes pass beside them: a runner that fails every node is another story.
    steady = [record(f"tests/p.py::test_ok_{i}") for i in range(10)]
    attempt(suite, [record(f"tests/p.py::test_{i}", "fail") for i in range(10)] + steady)
    attempt(suite, [record(f"tests/p.py::test_{i}") for i in range(10)] + steady)
    # As many as a page of JUnit tests alone: five of them diagnose the page's tests.
    with django_assert_max_num_queries(17):
        response = flaky_page()
    rows = response.context["rows"]
    assert len(rows) == 25 and response.context["page"].paginator.count == 30
    assert [row.flip is not None for row in rows] == [True] * 10 + [False] * 15
    with django_assert_max_num_queries(17):
        rest = flaky_page(page=2)
    assert len(rest.context["rows"]) == 5 and rest.context["rows"][0].heading


# --- the targets file -------------------------------------------------------------------


def test_the_targets_file_lists_a_flip_after_the_marked_and_before_the_junit_tests(
        suite, today):
    junit_flake(suite, JUNIT, times=3)
    flip(suite)
    assert measure_targets(suite, today) == [FLIPPED, JUNIT]
    measure_target_set(suite=suite, nodeid=JUNIT, actor="@finley", marked=True)
    assert measure_targets(suite, today) == [JUNIT, FLIPPED]
    assert measure_targets(suite, today, limit=1) == [JUNIT, FLIPPED]
    assert measure_targets(suite, today, limit=0) == [JUNIT]


def test_the_targets_file_leaves_out_no_flip_old_flips_and_flips_measured_since(
        suite, today):
    flip(suite, commit="old", days_ago=40)
    assert measure_targets(suite, today) == []  # older than the file's 30 days
    flip(suite, commit="new")
    assert measure_targets(suite, today) == [FLIPPED]
    report_ingest(suite=suite, body=body([measurement(FLIPPED, n=400, fails=0)]), actor="ci")
    assert measure_targets(suite, today) == []  # measured within budget since its flip


def test_the_targets_file_over_http_lists_the_flip(suite, client, token):
    flip(suite)
    response = client.get(f"{API}/suites/{suite.slug}/targets",
                          headers={"Authorization": f"Bearer {token}"})
    assert (response.status_code, response.content.decode()) == (200, f"{FLIPPED}\n")
