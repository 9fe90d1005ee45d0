"""The summary of each test's last 30 days (``junit.summary``) is exactly what the pages
summed from the rollups before it, after any sequence of JUnit uploads (on any day, in any
order), prunes and rebuilds (hypothesis): the flaky ranking and the tests it lists, over
the default window and the 7-day one, each row's figures, signatures and sparkline, and
each node's passive history."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

from django.utils import timezone
from hypothesis import example, given
from hypothesis import strategies as st

from junit.ingest import junit_ingest
from junit.models import NodeSummary, SignatureSummary
from junit.prune import prune_junit
from junit.selectors import Window, flaky_nodes, flaky_ranking, flaky_rows, passive_history
from junit.summary import rebuild_summary
from ledger.models import Node, Suite
from ledger.suites import suite_create
from tests.junit_files import junit_xml
from tests.properties import db_property, rolled_back

DB_PROPERTY = db_property(40)
FIRST_DAY = timezone.now().date() - timedelta(days=80)
NAMES = [f"test_{i}" for i in range(4)]
MESSAGES = ["timeout after 2.5s", "lock at 0x7f3a held", "assert 1 == 2"]


@dataclass(frozen=True)
class Step:
    kind: str  # "upload", "prune" or "rebuild"
    day: int  # days after FIRST_DAY
    commit: str = ""
    job: str = ""
    branch: str = ""
    cases: tuple = ()


@st.composite
def steps(draw) -> list[Step]:
    found = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["upload"] * 4 + ["prune", "rebuild"]))
        # Days close together half the time: uploads within one summary's window take the
        # add step, not the rebuild of a later day.
        day = draw(st.one_of(st.integers(0, 45), st.integers(38, 45)))
        if kind != "upload":
            found.append(Step(kind, day))
            continue
        cases = draw(st.lists(st.tuples(
            st.sampled_from(NAMES), st.sampled_from(["passed", "failed", "failed", "skipped"]),
            st.sampled_from(MESSAGES)), max_size=6))
        found.append(Step(kind, day, commit=draw(st.sampled_from(["c1", "c2", "c3"])),
                          job=draw(st.sampled_from(["j1", "j2"])),
                          branch=draw(st.sampled_from(["main", "feature"])),
                          cases=tuple(cases)))
    return found


def on(day: int) -> datetime:
    return datetime.combine(FIRST_DAY + timedelta(days=day), time(12), UTC)


def run(suite: Suite, step: Step) -> None:
    if step.kind == "upload":
        xml = junit_xml(*(("tests.test_a", name, outcome, message)
                          for name, outcome, message in step.cases))
        junit_ingest(suite=suite, body=xml, actor="ci", now=on(step.day),
                     query={"commit": step.commit, "branch": step.branch, "job": step.job})
    elif step.kind == "prune":
        prune_junit(days=7, today=on(step.day).date())
    else:
        rebuild_summary(suite, on(step.day).date())


def row_facts(rows) -> list[tuple]:
    return [(row.node.pk, row.figures, row.first_flaky, row.last_flaky, row.signatures,
             row.spark.counts) for row in rows]


def history_facts(history) -> tuple | None:
    if history is None:
        return None
    return (history.figures, history.signatures, history.spark.counts,
            [result.pk for result in history.latest])


def assert_summary_is_the_rollups(slug: str) -> None:
    summarized = Suite.objects.get(slug=slug)
    today = summarized.junit_summary_day
    if today is None:
        return
    summed = Suite.objects.get(slug=slug)
    summed.junit_summary_day = None  # read as though no summary were kept: the rollups
    window = Window(today)
    for days in (7, 30):
        shorter = Window(today, days)
        assert set(flaky_nodes(summarized, shorter).values_list("node_id", flat=True)) == set(
            flaky_nodes(summed, shorter).values_list("node_id", flat=True))
        # The 7-day view picks from the summary and ranks from the rollups: one list.
        assert list(flaky_ranking(summarized, shorter)) == list(flaky_ranking(summed, shorter))
    nodes = list(Node.objects.filter(suite=summarized).order_by("pk"))
    ids = [node.pk for node in nodes]
    assert row_facts(flaky_rows(summarized, window, ids)) == row_facts(
        flaky_rows(summed, window, ids))
    for node in nodes:
        assert history_facts(passive_history(node, today, suite=summarized)) == history_facts(
            passive_history(node, today, suite=summed))


def upload(day: int, commit: str, *outcomes: str) -> Step:
    return Step("upload", day, commit=commit, job="j1", branch="main",
                cases=tuple(("test_0", outcome, MESSAGES[0]) for outcome in outcomes))


@DB_PROPERTY
@given(steps())
# Added to a summary of day 45 that has no flaky day: one, then a later one, then an
# earlier one (each failed and passed in one job).
@example([upload(45, "c1", "passed"), *(upload(day, commit, "failed", "passed")
                                        for day, commit in ((40, "c2"), (42, "c3"), (38, "c4")))])
def test_the_summary_is_the_rollups_summed_after_uploads_prunes_and_rebuilds(db, history):
    with rolled_back():
        suite = suite_create(slug="summary", name="summary")
        for step in history:
            run(suite, step)
            assert_summary_is_the_rollups(suite.slug)


def test_a_page_of_another_day_sums_the_rollups(suite):
    """A summary of another day is never read: the pages sum the rollups."""
    xml = junit_xml(("tests.test_a", "test_0", "failed"), ("tests.test_a", "test_0", "passed"))
    junit_ingest(suite=suite, body=xml, actor="ci", now=on(40),
                 query={"commit": "c1", "branch": "main", "job": "j"})
    suite.refresh_from_db()
    assert suite.junit_summary_day == on(40).date()
    later = on(41).date()
    (row,) = flaky_ranking(suite, Window(later))
    assert row["last_flaky"] == on(40).date() and row["flaky_failures"] == 1
    assert flaky_nodes(suite, Window(later)).model.__name__ == "NodeDay"


def stored_summary(suite: Suite) -> tuple[list, list]:
    """The suite's summary rows as stored, without their primary keys."""
    return (sorted(NodeSummary.objects.filter(suite=suite).values_list(
                "node_id", "runs", "failures", "flaky_failures", "flaky_commits",
                "first_flaky", "last_flaky", "spark")),
            sorted(SignatureSummary.objects.filter(suite=suite).values_list(
                "node_id", "signature", "failures")))


def rebuilt_summary(suite: Suite) -> tuple[list, list]:
    """What rebuilding the summary from the rollups, of its own day, would store."""
    with rolled_back():
        rebuild_summary(suite, Suite.objects.get(pk=suite.pk).junit_summary_day)
        return stored_summary(suite)


def day_file(day: int) -> bytes:
    """A day's file of six tests: some not run that day, some skipped, failing (with one
    of the messages) or failing and then passing on a rerun (flaky)."""
    r = random.Random(day)
    cases = []
    for name in [*NAMES, "test_4", "test_5"]:
        roll = r.random()
        if roll < 0.2:
            continue  # not in the file: a test that stops running leaves the window
        message = r.choice(MESSAGES)
        if roll < 0.45:
            cases += [("tests.test_a", name, "failed", message),
                      ("tests.test_a", name, "passed")]
        elif roll < 0.6:
            cases.append(("tests.test_a", name, "failed", message))
        elif roll < 0.7:
            cases.append(("tests.test_a", name, "skipped"))
        else:
            cases.append(("tests.test_a", name, "passed"))
    return junit_xml(*cases)


def test_a_summary_moved_day_by_day_stores_what_a_rebuild_would(suite):
    """A later day's upload moves the summary by the days that left its window and those
    that joined it: the rows it stores are those a rebuild from the rollups stores, over
    days one apart, a window apart and more, a second file of a day, another branch, and
    a day already in the window or before it."""
    uploads = [(0, "main"), (1, "main"), (1, "feature"), (3, "main"), (10, "main"),
               (2, "main"), (29, "feature"), (30, "main"), (31, "main"), (31, "main"),
               (45, "main"), (9, "main"), (46, "feature"), (60, "main"), (75, "main"),
               (76, "main"), (120, "main"), (121, "main")]
    for step, (day, branch) in enumerate(uploads):
        junit_ingest(suite=suite, body=day_file(step), actor="ci", now=on(day),
                     query={"commit": f"c{step}", "branch": branch, "job": f"j{step % 2}"})
        moved = stored_summary(suite)
        assert moved == rebuilt_summary(suite), (step, day)
        assert moved[0], "the summary holds the tests of the window"
