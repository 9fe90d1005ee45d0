"""What the pages and the targets file read of passive evidence: the tests ranked by flaky
failures over a window of days, and each listed test's figures, top failure signatures,
last 30 days, quarantine entry and measurement mark. Everything here reads the rollups
(``NodeDay``, ``SignatureDay``), so its cost follows the window and the page, never the
raw rows kept. For the default window, on every branch, they read each test's summary of
those days instead (``junit.summary``), when it is of today."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, timedelta
from operator import add
from typing import Any

from django.db.models import Exists, Max, Min, OuterRef, Q, Sum
from django.utils.safestring import mark_safe

from flakeboard import rules as gate_rules
from ledger.models import MeasureTarget, Node, QuarantineEntry, Suite
from ledger.predicates import window_q
from ledger.rows import EntryRow, entry_row

from .models import (
    CaseResult,
    JUnitFile,
    NodeDay,
    NodeSummary,
    SignatureDay,
    SignatureSummary,
    node_results,
)
from .rules import FlakyFigures
from .summary import COUNTS, SUMMARY_DAYS, summary_of

WINDOWS = (7, 30, 90)
DEFAULT_WINDOW = SUMMARY_DAYS
SPARK_DAYS = SUMMARY_DAYS
TOP_SIGNATURES = 3


@dataclass(frozen=True)
class Window:
    """The days a ranking counts (``days`` of them, ending ``today``), on one branch or all,
    and the text a node id holds. ``q`` is the days alone, for rows that have no branch."""

    today: date
    days: int = DEFAULT_WINDOW
    branch: str = ""
    text: str = ""

    @property
    def days_window(self) -> gate_rules.DayWindow:
        return gate_rules.DayWindow(first=-(self.days - 1), last=0)

    @property
    def since(self) -> date:
        return self.days_window.bounds(self.today)[0]

    def q(self, field: str = "day") -> Q:
        """``field`` (a day) falls in the window, both ends included."""
        return window_q(field, self.days_window, self.today)

    def rows(self, model, **more):
        rows = model.objects.filter(self.q(), **more)
        return rows.filter(branch=self.branch) if self.branch else rows


def flaky_days(suite: Suite, window: Window):
    """The days' rollups with flaky failures in the window (its branch and text too)."""
    rows = window.rows(NodeDay, suite=suite, flaky_failures__gt=0)
    if window.text:
        rows = rows.filter(node__nodeid__icontains=window.text)
    return rows


def summarized(suite: Suite, window: Window) -> bool:
    """Whether the summary holds the window's figures: its days, every branch, today's."""
    return (window.days == SUMMARY_DAYS and not window.branch
            and summary_of(suite, window.today))


def flaky_nodes(suite: Suite, window: Window):
    """Rows whose ``node_id`` are the tests with flaky failures in the window: the
    summaries of those last flaky in it, when the summary spans the window on every
    branch; else ``flaky_days``."""
    if window.days > SUMMARY_DAYS or window.branch or not summary_of(suite, window.today):
        return flaky_days(suite, window)
    rows = NodeSummary.objects.filter(suite=suite, flaky_failures__gt=0,
                                      last_flaky__gte=window.since)
    return rows.filter(node__nodeid__icontains=window.text) if window.text else rows


def flaky_ranking(suite: Suite, window: Window, days=None):
    """The tests with flaky failures in the window (or in ``days``, some of its
    ``flaky_nodes``), most first: values rows of ``node_id``, ``flaky_failures``,
    ``flaky_commits``, ``first_flaky`` and ``last_flaky``."""
    rows = flaky_nodes(suite, window) if days is None else days
    if rows.model is NodeSummary:
        if window.days == SUMMARY_DAYS:
            return rows.values("node_id", "flaky_failures", "flaky_commits", "first_flaky",
                               "last_flaky").order_by("-flaky_failures", "-flaky_commits",
                                                      "node_id")
        # A shorter window (the 7-day view) takes its tests from the summary, exactly
        # (those last flaky in it, less any the caller excluded), and ranks them from
        # their rollups of the window: the order needs the window's flaky commits, which
        # the summary holds only over its 30 days, and the window's flaky failures, which
        # it holds a day at a time in ``spark``, a JSON list neither engine can sum in an
        # ORDER BY alike. Only those tests' days in the window are read.
        rows = flaky_days(suite, window).filter(node_id__in=rows.values("node_id"))
    return (
        rows.values("node_id")
        .annotate(flaky_failures=Sum("flaky_failures"), flaky_commits=Sum("flaky_commits"),
                  first_flaky=Min("day"), last_flaky=Max("day"))
        .order_by("-flaky_failures", "-flaky_commits", "node_id")
    )


@dataclass(frozen=True)
class Spark:
    """A test's flaky failures per day over the last SPARK_DAYS days, oldest first."""

    since: date
    counts: list[int]

    @property
    def days_flaky(self) -> int:
        return sum(1 for count in self.counts if count)

    def bars(self, height: int = 20) -> list[dict]:
        """The SVG bars: x and height, scaled to the busiest day."""
        top = max(self.counts, default=0) or 1
        return [{"x": i * 3, "height": max(1, round(count * height / top)) if count else 0,
                 "y": height - (max(1, round(count * height / top)) if count else 0)}
                for i, count in enumerate(self.counts)]

    @property
    def rects(self) -> str:
        """The bars of the days with a count as SVG ``rect`` elements, written here in one
        pass: a template loop over 30 days a row was most of the flaky-tests page's
        rendering (25 rows, each number through the template's localization)."""
        # Integers this method computed: nothing in them to escape.
        return mark_safe("".join(
            f'<rect x="{bar["x"]}" y="{bar["y"]}" width="2" height="{bar["height"]}"/>'
            for bar in self.bars() if bar["height"]))

    @property
    def spoken(self) -> str:
        """The non-zero days, for the chart's accessible name and its numbers beside it."""
        days = [(self.since + timedelta(days=i), count)
                for i, count in enumerate(self.counts) if count]
        if not days:
            return f"no flaky failures in the last {len(self.counts)} days"
        return ", ".join(f"{day:%b} {day.day}: {count}" for day, count in days)


@dataclass
class FlakyRow:
    node: Node
    figures: FlakyFigures
    first_flaky: date | None  # None: not flaky in a JUnit file in the window
    last_flaky: date | None
    signatures: list[tuple[str, int]]
    spark: Spark
    entry: EntryRow | None
    marked: bool = False
    quarantine_query: str = ""  # the entry form's prefill, set by the page
    # Evidence from outside JUnit files (the gate's flips, new tests flaky at birth), set by
    # the page that shows it.
    flip: Any = None
    birth: Any = None
    evidence: Any = None  # what the row is listed for, in its figures' columns
    heading: str = ""  # the group this row begins on its page, set by the page

    @property
    def can_quarantine(self) -> bool:
        """No open entry, and a tier that may be quarantined."""
        return self.entry is None and gate_rules.quarantinable(self.node.tier)


def flaky_rows(suite: Suite, window: Window, ids: list[int]) -> list[FlakyRow]:
    """The page's rows for the nodes ``ids`` (a page of a ranking), in that order, with
    their passive figures in the window (zero for a node no JUnit file showed flaky): four
    queries whatever the page's size."""
    nodes = Node.objects.annotate(marked=Exists(MeasureTarget.objects.filter(
        node=OuterRef("pk")))).in_bulk(ids)
    entries = {entry.node_id: entry_row(entry, window.today)
               for entry in QuarantineEntry.objects.open().filter(
                   node_id__in=ids).select_related("node")}
    if summarized(suite, window):
        summaries = summary_figures(ids, window.today)
        return [FlakyRow(node=nodes[pk], **summaries.get(pk, summary_none(window.today)),
                         entry=entries.get(pk), marked=nodes[pk].marked) for pk in ids]
    # One read of each node's days, over the window and the sparkline's 30 days together.
    spark_since = window.today - timedelta(days=SPARK_DAYS - 1)
    widest = Window(window.today, max(window.days, SPARK_DAYS), window.branch)
    totals = defaultdict(lambda: (0, 0, 0, 0))
    flaky_on = defaultdict(list)  # each node's days with flaky failures in the window
    daily = defaultdict(int)
    for node, day, *sums in widest.rows(NodeDay, node_id__in=ids).values_list(
            "node_id", "day").annotate(Sum("runs"), Sum("failures"), Sum("flaky_failures"),
                                       Sum("flaky_commits")):
        if day >= window.since:
            totals[node] = tuple(map(add, totals[node], sums))
            if sums[2]:
                flaky_on[node].append(day)
        if day >= spark_since:
            daily[node, day] += sums[2]
    signatures = defaultdict(list)
    for row in window.rows(SignatureDay, node_id__in=ids).values("node_id", "signature").annotate(
            count=Sum("failures")).order_by("-count", "signature"):
        if len(signatures[row["node_id"]]) < TOP_SIGNATURES:
            signatures[row["node_id"]].append((row["signature"], row["count"]))
    rows = []
    for pk in ids:
        counts = [daily.get((pk, spark_since + timedelta(days=i)), 0) for i in range(SPARK_DAYS)]
        days = flaky_on[pk]
        rows.append(FlakyRow(
            node=nodes[pk], figures=FlakyFigures(*totals[pk]),
            first_flaky=min(days, default=None), last_flaky=max(days, default=None),
            signatures=signatures[pk], spark=Spark(spark_since, counts),
            entry=entries.get(pk), marked=nodes[pk].marked,
        ))
    return rows


def junit_branches(suite: Suite) -> list[str]:
    """The branches of the JUnit files kept, for the page's filter."""
    return list(JUnitFile.objects.filter(suite=suite).exclude(branch="").order_by(
        "branch").values_list("branch", flat=True).distinct())


@dataclass(frozen=True)
class PassiveHistory:
    """A node's passive evidence for its page: the window's figures, its top signatures,
    its last 30 days and its latest results."""

    window: Window
    figures: FlakyFigures
    signatures: list[tuple[str, int]]
    spark: Spark
    latest: list[CaseResult]


def passive_history(node: Node, today: date, latest: int = 10,
                    suite: Suite | None = None) -> PassiveHistory | None:
    """None when no JUnit file has named the node in the window or among its kept rows;
    ``suite``, the node's, when the caller has it read."""
    window = Window(today, DEFAULT_WINDOW)
    if summary_of(suite or node.suite, today):
        summary = summary_figures([node.pk], today).get(node.pk)
        results = latest_results(node, latest)
        if summary is None and not results:
            return None
        summary = summary or summary_none(today)
        return PassiveHistory(window, summary["figures"], summary["signatures"],
                              summary["spark"], results)
    sums = COUNTS
    # A row a day (a few dozen at most): the window's figures are their sums.
    days = list(window.rows(NodeDay, node=node).values("day").annotate(
        **{name: Sum(name) for name in sums}).order_by())
    results = latest_results(node, latest)
    if not days and not results:
        return None
    figures = FlakyFigures(*(sum(day[name] for day in days) for name in sums))
    per_day = {day["day"]: day["flaky_failures"] for day in days}
    spark = Spark(window.today - timedelta(days=SPARK_DAYS - 1),
                  [per_day.get(window.today - timedelta(days=SPARK_DAYS - 1 - i), 0)
                   for i in range(SPARK_DAYS)])
    signatures = [(row["signature"], row["count"]) for row in window.rows(
        SignatureDay, node=node).values("signature").annotate(count=Sum("failures")).order_by(
        "-count", "signature")[:TOP_SIGNATURES]]
    return PassiveHistory(window, figures, signatures, spark, results)


def counted_results(**filters):
    """The results detection counted (``junit.detect``): those of the files that were not
    an infrastructure failure."""
    return CaseResult.objects.filter(file__infrastructure_reason="", **filters).order_by()


def counted_node_results(suite_id: int, **filters):
    """``counted_results`` of some of the suite's tests (``node_results``)."""
    return node_results(suite_id, file__infrastructure_reason="", **filters)


def latest_results(node: Node, latest: int) -> list[CaseResult]:
    return list(node_results(node.suite_id, node_id=node.pk).select_related("file").order_by(
        "-day", "-file__created_at", "-file_id")[:latest])


def summary_none(today: date) -> dict:
    """A row's figures for a test the summary does not hold: no JUnit run in its days."""
    since = today - timedelta(days=SPARK_DAYS - 1)
    return {"figures": FlakyFigures(0, 0, 0, 0), "first_flaky": None, "last_flaky": None,
            "signatures": [], "spark": Spark(since, [0] * SPARK_DAYS)}


def summary_figures(ids: list[int], today: date) -> dict[int, dict]:
    """The summaries of the nodes ``ids`` that have one, as ``FlakyRow`` fields: two
    queries."""
    signatures = defaultdict(list)
    for node, signature, count in SignatureSummary.objects.filter(node_id__in=ids).order_by(
            "-failures", "signature").values_list("node_id", "signature", "failures"):
        if len(signatures[node]) < TOP_SIGNATURES:
            signatures[node].append((signature, count))
    since = today - timedelta(days=SPARK_DAYS - 1)
    return {node: {"figures": FlakyFigures(*counts), "first_flaky": first, "last_flaky": last,
                   "signatures": signatures[node], "spark": Spark(since, list(spark))}
            for node, *counts, first, last, spark in NodeSummary.objects.filter(
                node_id__in=ids).values_list("node_id", *COUNTS, "first_flaky", "last_flaky",
                                             "spark")}
