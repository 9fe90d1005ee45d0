"""The summary of each test's last SUMMARY_DAYS days (``NodeSummary``, ``SignatureSummary``),
kept so that the flaky-tests page, the targets file, the overview's tile and a node's
page read one row a test instead of adding up its days' rollups on every request.

It is of one day, the suite's ``junit_summary_day``, and equals the rollups (``NodeDay``,
``SignatureDay``) summed over the window ending that day, every branch:

- each upload adds its counts in its own transaction, under the suite's lock (called
  where ``junit.detect`` writes the day's rollups), when its day is in the window;
- an upload of a later day moves it to that day: the rollups of the days that left the
  window are taken off and those of the days that joined it added (all of it rebuilt when
  the two windows share no day);
- the daily prune (``prune_junit``) and ``rebuild_rollups`` rebuild it from the rollups
  for their day: a window that slides loses days, and the rollups keep them;
- a page reads it only when it is of today; otherwise it sums the rollups, as before.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import date, timedelta

from django.db import connection, transaction
from django.db.models import Case, F, Max, Min, Q, Sum, When

from flakeboard.rules.summary import (
    SUMMARY_DAYS,
    DayCounts,
    SummaryCounts,
    summary_added,
    summary_moved,
    summary_window,
)
from ledger.locks import lock_suite
from ledger.models import Suite
from ledger.predicates import window_q
from web.bulk import counts_added, insert_plain, one_parameter, plain_rows, update_rows

from .models import NodeDay, NodeSummary, SignatureDay, SignatureSummary

COUNTS = ("runs", "failures", "flaky_failures", "flaky_commits")
SUMMARY_FIELDS = (*COUNTS, "first_flaky", "last_flaky", "spark")
CHUNK = 5000
# A summary's columns beyond its runs and failures while it holds no flaky failure.
NO_FLAKY_DAYS = {"first_flaky": None, "last_flaky": None, "spark": json.dumps([0] * SUMMARY_DAYS)}


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
    later day moves the summary to that day (its rollups, the upload's among them, read
    for the days that joined the window), or rebuilds it when the windows share no day;
    a day before its window adds nothing. ``suite`` is as the upload's lock read it: its
    summary day is the stored one, and follows a move here."""
    suite_id, as_of = suite.pk, suite.junit_summary_day
    if as_of is None or day > as_of:
        if as_of is not None and summary_window().contains(as_of, day):
            _moved(suite_id, as_of, day)
            Suite.objects.filter(pk=suite_id).update(junit_summary_day=day)
        else:
            summary_rebuild(suite_id, day)
        suite.junit_summary_day = day
        return
    if not summary_window().contains(day, as_of):
        return
    # A test with no flaky failure here keeps its spark and its flaky days: its counts are
    # added where they are stored. The others' rows are read and written whole.
    flaky = {node: counts for node, counts in added.items()
             if counts.flaky_failures or counts.flaky_commits}
    counts_added(NodeSummary, key=("node_id",), counts=("runs", "failures"), fixed={
        "suite_id": suite_id, "flaky_failures": 0, "flaky_commits": 0, **NO_FLAKY_DAYS},
        rows=[(node, counts.runs, counts.failures) for node, counts in added.items()
              if node not in flaky])
    before = _summaries(NodeSummary.objects.filter(
        node_id__in=one_parameter(flaky, "bigint"))) if flaky else {}
    updates, inserts = [], []
    for node, counts in flaky.items():
        pk, summary = before.get(node, (None, SummaryCounts()))
        summary = summary_added(summary, counts, day=day, as_of=as_of)
        if pk is None:
            inserts.append((suite_id, node, *_plain(summary)))
        else:
            updates.append((*_plain(summary), pk))
    update_rows(NodeSummary, SUMMARY_FIELDS, updates)
    insert_plain(NodeSummary, ("suite_id", "node_id", *SUMMARY_FIELDS), inserts)
    counts_added(SignatureSummary, fixed={"suite_id": suite_id}, key=("node_id", "signature"),
                 counts=("failures",), rows=[(*key, count) for key, count in failing.items()])


def _summaries(rows) -> dict[int, tuple[int, SummaryCounts]]:
    """Stored summaries (a NodeSummary queryset), by node: (primary key, summary)."""
    return {node: (pk, SummaryCounts(*values[:-1], tuple(values[-1])))
            for pk, node, *values in rows.values_list("pk", "node_id", *SUMMARY_FIELDS)}


def _sums(days) -> dict[int, tuple[int, ...]]:
    """NodeDay rows (a queryset) summed by node: {node: its COUNTS}."""
    rows = days.values("node_id").annotate(*(Sum(name) for name in COUNTS)).order_by(
        ).values_list("node_id", *(f"{name}__sum" for name in COUNTS))
    return {node: tuple(sums) for node, *sums in plain_rows(rows, CHUNK)}


def _moved(suite_id: int, as_of: date, today: date) -> None:
    """Move the summary of ``as_of`` to ``today``, a later day whose window holds
    ``as_of``: only the rollups of the days that left the window and of those that joined
    it are read (``summary_moved``), not the window's every day. A test keeps its row
    while it has a day in the window, as a rebuild would.

    A test with a flaky day, before or now, has its row read and written whole (its spark
    moves). The others, nearly all, only change their counts: the database moves them
    itself (``_counts_moved``), without a row of theirs read here."""
    one = timedelta(days=1)
    first_before, _ = summary_window().bounds(as_of)
    first_now, _ = summary_window().bounds(today)
    days = NodeDay.objects.filter(suite_id=suite_id)
    gone_days, new_days = (first_before, first_now - one), (as_of + one, today)
    # The tests that ran on the days that left or on those that joined, not both (few):
    # one of the first may have no day left in the window, and one of the others no row.
    joins = Case(When(day__gte=new_days[0], then=1), default=0)
    one_side = dict(days.filter(Q(day__range=gone_days) | Q(day__range=new_days)).values(
        "node_id").annotate(first=Min(joins), last=Max(joins)).filter(
        first=F("last")).order_by().values_list("node_id", "last"))
    maybe_gone = {node for node, joined in one_side.items() if not joined}
    gone = sorted(maybe_gone - set(days.filter(
        window_q("day", summary_window(), today), node_id__in=maybe_gone).values_list(
        "node_id", flat=True))) if maybe_gone else []
    if gone:
        NodeSummary.objects.filter(node_id__in=one_parameter(gone, "bigint")).delete()
    joined_flaky = defaultdict(dict)
    for node, day, flaky in days.filter(day__range=new_days, flaky_failures__gt=0).values_list(
            "node_id", "day").annotate(Sum("flaky_failures")).order_by():
        joined_flaky[node][day] = flaky
    sparked = _summaries(NodeSummary.objects.filter(suite_id=suite_id, flaky_failures__gt=0))
    whole = sorted((sparked.keys() | joined_flaky.keys()) - set(gone))
    _counts_moved(suite_id, gone_days, new_days, fresh=any(one_side.values()))
    if not whole:
        _signatures_moved(suite_id, gone_days, new_days)
        return
    # The rows of those flaky only on a day that joined: their counts, and no spark yet.
    stored = {**_summaries(NodeSummary.objects.filter(node_id__in=one_parameter(
        joined_flaky.keys() - sparked.keys(), "bigint"))), **sparked}
    chosen = days.filter(node_id__in=one_parameter(whole, "bigint"))
    left, joined = (_sums(chosen.filter(day__range=span)) for span in (gone_days, new_days))
    none = (0,) * len(COUNTS)
    updates, inserts = [], []
    for node in whole:
        pk, summary = stored.get(node, (None, SummaryCounts()))
        summary = summary_moved(summary, as_of=as_of, today=today, left=left.get(node, none),
                                joined=joined.get(node, none),
                                joined_flaky=joined_flaky.get(node, {}))
        if pk is None:
            inserts.append((suite_id, node, *_plain(summary)))
        else:
            updates.append((*_plain(summary), pk))
    update_rows(NodeSummary, SUMMARY_FIELDS, updates)
    insert_plain(NodeSummary, ("suite_id", "node_id", *SUMMARY_FIELDS), inserts)
    _signatures_moved(suite_id, gone_days, new_days)


def _counts_moved(suite_id: int, gone_days: tuple, new_days: tuple, *, fresh: bool) -> None:
    """``counts_moved`` in the database, for the tests with no flaky day before or now (no
    flaky failure in their summary, none on a day that joined): each row's counts less
    those of the days that left, plus those of the days that joined; a test with no row
    (it ran on no day of the window before) gets one, of the days that joined, when
    ``fresh`` says a test ran on a day that joined and on none that left (one that ran on
    a day that left has a row). Run after the rows of the tests gone are deleted, before
    those with flaky days are written."""
    quote = connection.ops.quote_name
    summary, rollups = (quote(model._meta.db_table) for model in (NodeSummary, NodeDay))
    counts = [quote(name) for name in COUNTS]
    day = connection.ops.adapt_datefield_value
    (gone_from, gone_to), (new_from, new_to) = ([day(d) for d in span]
                                                for span in (gone_days, new_days))
    # +1 a count of a day that joined, -1 of one that left.
    signed = ", ".join(f"SUM(CASE WHEN day >= %s THEN {c} ELSE -{c} END) AS {c}"
                       for c in counts)
    sets = ", ".join(f"{c} = {summary}.{c} + d.{c}" for c in counts)
    update = (f"UPDATE {summary} SET {sets} "  # noqa: S608
              f"FROM (SELECT node_id, {signed} FROM {rollups} WHERE suite_id = %s "
              "AND (day BETWEEN %s AND %s OR day BETWEEN %s AND %s) GROUP BY node_id "
              "HAVING SUM(CASE WHEN day >= %s THEN flaky_failures ELSE 0 END) = 0) AS d "
              f"WHERE {summary}.node_id = d.node_id AND {summary}.flaky_failures = 0")
    columns = ", ".join(quote(name) for name in SUMMARY_FIELDS)
    sums = ", ".join(f"SUM({c})" for c in counts)
    insert = (f"INSERT INTO {summary} (suite_id, node_id, {columns}) "  # noqa: S608
              f"SELECT %s, node_id, {sums}, %s, %s, %s FROM {rollups} AS r "
              "WHERE suite_id = %s AND day BETWEEN %s AND %s AND NOT EXISTS (SELECT 1 FROM "
              f"{summary} AS s WHERE s.node_id = r.node_id) GROUP BY node_id "
              "HAVING SUM(flaky_failures) = 0")
    with connection.cursor() as cursor:
        # The names are the models' own, quoted; the values are parameters.
        cursor.execute(update, [*[new_from] * len(counts), suite_id, gone_from, gone_to,
                                new_from, new_to, new_from])
        if fresh:
            cursor.execute(insert, [suite_id, *NO_FLAKY_DAYS.values(), suite_id, new_from,
                                    new_to])


def _signatures_moved(suite_id: int, gone_days: tuple, new_days: tuple) -> None:
    """SignatureSummary moved with NodeSummary: the failures of the days that left taken
    off, of those that joined added; a signature left with none is deleted."""
    days = SignatureDay.objects.filter(suite_id=suite_id)
    change = defaultdict(int)
    for span, sign in ((gone_days, -1), (new_days, 1)):
        for node, sig, count in days.filter(day__range=span).values_list(
                "node_id", "signature").annotate(Sum("failures")).order_by():
            change[node, sig] += sign * count
    change = {key: count for key, count in change.items() if count}
    if not change:
        return
    stored = {(node, sig): (pk, count) for pk, node, sig, count in
              SignatureSummary.objects.filter(node_id__in=one_parameter(
                  sorted({node for node, _ in change}), "bigint"))
              .values_list("pk", "node_id", "signature", "failures")}
    updates, inserts, gone = [], [], []
    for key, count in change.items():
        pk, before = stored.get(key, (None, 0))
        if pk is None:
            inserts.append((suite_id, *key, count))
        elif before + count:
            updates.append((before + count, pk))
        else:
            gone.append(pk)
    if gone:
        SignatureSummary.objects.filter(pk__in=gone).delete()
    update_rows(SignatureSummary, ("failures",), updates)
    insert_plain(SignatureSummary, ("suite_id", "node_id", "signature", "failures"), inserts)


def summary_node_merged(into: int) -> None:
    """A node's rollups gained another's (``junit.merge``): its summary rebuilt."""
    suite_id = NodeDay.objects.filter(node_id=into).values_list("suite_id", flat=True).first()
    if suite_id is not None and (as_of := summary_day(suite_id)) is not None:
        summary_rebuild(suite_id, as_of, [into])
