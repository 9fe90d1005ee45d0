"""The summary of each test's last SUMMARY_DAYS days (``NodeSummary``, ``SignatureSummary``),
kept so that the flaky-tests page, the targets file, the overview's tile and a node's
page read one row a test instead of adding up its days' rollups on every request.

It is of one day, the suite's ``junit_summary_day``, and equals the rollups (``NodeDay``,
``SignatureDay``) summed over the window ending that day, every branch:

- each upload adds its counts in its own transaction, under the suite's lock (called
  where ``junit.detect`` writes the day's rollups), when its day is in the window;
- an upload of a later day, the daily prune (``prune_junit``) and ``rebuild_rollups``
  rebuild it from the rollups for their day: a window that slides loses days, and the
  rollups keep them;
- a page reads it only when it is of today; otherwise it sums the rollups, as before.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import date

from django.db import connection, transaction
from django.db.models import Max, Min, Q, Sum

from flakeboard.rules.summary import (
    SUMMARY_DAYS,
    DayCounts,
    SummaryCounts,
    summary_added,
    summary_window,
)
from ledger.locks import lock_suite
from ledger.models import Suite
from ledger.predicates import window_q
from web.bulk import insert_plain, update_rows

from .models import NodeDay, NodeSummary, SignatureDay, SignatureSummary

COUNTS = ("runs", "failures", "flaky_failures", "flaky_commits")
SUMMARY_FIELDS = (*COUNTS, "first_flaky", "last_flaky", "spark")
CHUNK = 5000


def summary_day(suite_id: int) -> date | None:
    return Suite.objects.filter(pk=suite_id).values_list("junit_summary_day", flat=True).first()


def summary_of(suite: Suite, today: date) -> bool:
    """Whether the suite's summary is of ``today``, as the suite was read."""
    return suite.junit_summary_day == today


def _plain(summary: SummaryCounts) -> tuple:
    """A summary's values as the database takes them, in SUMMARY_FIELDS order."""
    day = connection.ops.adapt_datefield_value
    return (summary.runs, summary.failures, summary.flaky_failures, summary.flaky_commits,
            day(summary.first_flaky), day(summary.last_flaky), json.dumps(list(summary.spark)))


def _rebuilt_rows(suite_id: int, today: date, nodes=None) -> dict[int, SummaryCounts]:
    """Each node's summary, summed from its rollups over the window ending ``today``."""
    days = NodeDay.objects.filter(window_q("day", summary_window(), today), suite_id=suite_id)
    if nodes is not None:
        days = days.filter(node_id__in=nodes)
    spark = defaultdict(lambda: [0] * SUMMARY_DAYS)
    for node, day, flaky in days.filter(flaky_failures__gt=0).values_list(
            "node_id", "day").annotate(Sum("flaky_failures")).order_by():
        spark[node][SUMMARY_DAYS - 1 - (today - day).days] = flaky
    flaky_day = Q(flaky_failures__gt=0)
    return {
        node: SummaryCounts(*sums, first, last, tuple(spark.get(node, (0,) * SUMMARY_DAYS)))
        for node, *sums, first, last in days.values("node_id").annotate(
            **{f"sum_{name}": Sum(name) for name in COUNTS},
            first=Min("day", filter=flaky_day), last=Max("day", filter=flaky_day)).order_by(
            ).values_list("node_id", *(f"sum_{name}" for name in COUNTS), "first", "last")
    }


def _signature_rows(suite_id: int, today: date, nodes=None) -> dict[tuple[int, str], int]:
    rows = SignatureDay.objects.filter(window_q("day", summary_window(), today),
                                       suite_id=suite_id)
    if nodes is not None:
        rows = rows.filter(node_id__in=nodes)
    return {(node, sig): count for node, sig, count in rows.values_list(
        "node_id", "signature").annotate(Sum("failures")).order_by() if count}


def _write(suite_id: int, summaries: dict[int, SummaryCounts],
           signatures: dict[tuple[int, str], int]) -> None:
    insert_plain(NodeSummary, ("suite_id", "node_id", *SUMMARY_FIELDS),
                 [(suite_id, node, *_plain(s)) for node, s in summaries.items()])
    insert_plain(SignatureSummary, ("suite_id", "node_id", "signature", "failures"),
                 [(suite_id, node, sig, count) for (node, sig), count in signatures.items()])


def summary_rebuild(suite_id: int, today: date, nodes=None) -> int:
    """Rebuild the suite's summary (or ``nodes``' rows of it) from the rollups, of
    ``today``; the caller holds the suite's lock. The number of tests summarized."""
    summaries = _rebuilt_rows(suite_id, today, nodes)
    signatures = _signature_rows(suite_id, today, nodes)
    for model in (NodeSummary, SignatureSummary):
        rows = model.objects.filter(suite_id=suite_id)
        (rows if nodes is None else rows.filter(node_id__in=nodes)).delete()
    _write(suite_id, summaries, signatures)
    if nodes is None:
        Suite.objects.filter(pk=suite_id).update(junit_summary_day=today)
    return len(summaries)


def rebuild_summary(suite: Suite, today: date) -> int:
    """``summary_rebuild`` in a transaction of its own, under the suite's lock."""
    with transaction.atomic():
        lock_suite(suite.pk)
        return summary_rebuild(suite.pk, today)


def roll_summaries(today: date) -> int:
    """Rebuild every summary older than ``today`` for ``today`` (the daily prune does, so
    that the day's first upload need not); the number of suites rolled."""
    rolled = 0
    stale = Q(junit_summary_day__isnull=True) | Q(junit_summary_day__lt=today)
    for suite in Suite.objects.filter(stale, pk__in=NodeDay.objects.values("suite_id")).order_by(
            "pk"):
        rebuild_summary(suite, today)
        rolled += 1
    return rolled


def summary_add(suite: Suite, day: date, added: dict[int, DayCounts],
                failing: dict[tuple[int, str], int]) -> None:
    """Add an upload's counts of ``day`` ({node: its counts}, {(node, signature):
    failures}) to the summary, written after the day's rollups, in their transaction. A
    day later than the summary's rebuilds it for that day; one before its window adds
    nothing. ``suite`` is as the upload's lock read it: its summary day is the stored
    one, and follows a rebuild here."""
    suite_id, as_of = suite.pk, suite.junit_summary_day
    if as_of is None or day > as_of:
        summary_rebuild(suite_id, day)
        suite.junit_summary_day = day
        return
    if not summary_window().contains(day, as_of):
        return
    nodes = list(added)
    before = {}
    for start in range(0, len(nodes), CHUNK):
        for pk, node, *values in NodeSummary.objects.filter(
                node_id__in=nodes[start:start + CHUNK]).values_list(
                "pk", "node_id", *SUMMARY_FIELDS):
            before[node] = (pk, SummaryCounts(*values[:-1], tuple(values[-1])))
    updates, inserts = [], []
    for node, counts in added.items():
        pk, summary = before.get(node, (None, SummaryCounts()))
        summary = summary_added(summary, counts, day=day, as_of=as_of)
        if pk is None:
            inserts.append((suite_id, node, *_plain(summary)))
        else:
            updates.append((*_plain(summary), pk))
    update_rows(NodeSummary, SUMMARY_FIELDS, updates)
    insert_plain(NodeSummary, ("suite_id", "node_id", *SUMMARY_FIELDS), inserts)
    _signatures_add(suite_id, failing)


def _signatures_add(suite_id: int, failing: dict[tuple[int, str], int]) -> None:
    if not failing:
        return
    nodes = sorted({node for node, _ in failing})
    existing = {(node, sig): (pk, count) for pk, node, sig, count in
                SignatureSummary.objects.filter(node_id__in=nodes).values_list(
                    "pk", "node_id", "signature", "failures")}
    update_rows(SignatureSummary, ("failures",), [
        (existing[key][1] + count, existing[key][0]) for key, count in failing.items()
        if key in existing])
    insert_plain(SignatureSummary, ("suite_id", "node_id", "signature", "failures"), [
        (suite_id, node, sig, count) for (node, sig), count in failing.items()
        if (node, sig) not in existing])


def summary_node_merged(into: int) -> None:
    """A node's rollups gained another's (``junit.merge``): its summary rebuilt."""
    suite_id = NodeDay.objects.filter(node_id=into).values_list("suite_id", flat=True).first()
    if suite_id is not None and (as_of := summary_day(suite_id)) is not None:
        summary_rebuild(suite_id, as_of, [into])
