"""What the trends charts count. Reason codes per bucket over a date range, read from the
per-day rollups only, so the cost depends on the range, never on how much history the suite
holds.

Retries at one commit (attempts after a REJECT, flips) are read from the verdict batches
of the range that retried a gate, and their flipped rows: the rollups count reason codes,
not attempts. Their cost grows with the retries in the range, not with all history.

New tests measured at birth are read from the range's measurements judged by the new-test
guard (``new_test_flaky``, ``new_test_clean``): the rollups count rows, not tests. Their
cost grows with the guard's rows in the range.

The quarantined share over time is rebuilt from the ledger's entries (their creation,
clearing and expiry) and the nodes' first and last sightings: its cost grows with the
number of entries and with the range, not with the upload history.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from itertools import accumulate

from django.db.models import Count, Exists, Min, OuterRef, Q, Sum

from flakeboard import rules
from flakeboard.rules.trends import FIRST_RETRY, RETRIED_AFTER, Gate, first_flip
from flakeboard.rules.trends_range import BUCKET_DAYS, bucket_start, bucket_starts
from ledger import predicates
from ledger.models import CiRun, Node, QuarantineEntry, Suite

from .models import Measurement, NodeVerdict, ReasonRollup, VerdictBatch

BUCKETS = tuple(BUCKET_DAYS)
SOURCES = {"verdicts": Gate.ARBITER, "reports": Gate.BUDGET}


def reason_counts(
    suite: Suite, *, start: date, end: date, bucket: str = "day", source: str = "verdicts"
) -> dict:
    """Counts per reason code and bucket over [start, end].

    Returns ``{"buckets": [ISO dates], "series": {reason: [count per bucket]},
    "totals": {reason: count}}``; reasons with no count in the range are left out.
    """
    if bucket not in BUCKETS:
        raise ValueError(f"bucket must be one of {BUCKETS}")
    starts = bucket_starts(start, end, bucket)
    index = {d: i for i, d in enumerate(starts)}
    rows = (
        ReasonRollup.objects.filter(suite=suite, source=source, day__gte=start, day__lte=end)
        .values_list("day", "reason")
        .annotate(total=Sum("count"))
        .order_by()
    )
    series: dict[str, list[int]] = {}
    for day, reason, total in rows:
        counts = series.setdefault(reason, [0] * len(starts))
        counts[index[bucket_start(day, bucket)]] += total
    series = {reason: series[reason] for reason in sorted(series) if sum(series[reason])}
    return {
        "buckets": [d.isoformat() for d in starts],
        "series": series,
        "totals": {reason: sum(counts) for reason, counts in series.items()},
    }


def retries_after_reject(batches):
    """Those of ``batches`` that retried a gate its previous attempt at the same patch and
    commit had already rejected (``rules.trends.retried_after_reject``, in SQL)."""
    previous = VerdictBatch.objects.filter(
        suite=OuterRef("suite"), patch=OuterRef("patch"), commit=OuterRef("commit"),
        attempt=OuterRef("attempt") - 1, verdict=RETRIED_AFTER)
    return batches.filter(attempt__gte=FIRST_RETRY).filter(Exists(previous))


def retry_counts(suite: Suite, *, start: date, end: date, bucket: str = "day") -> dict:
    """Per bucket of [start, end], in two queries: ``after_reject``, the verdict batches
    that retried a gate already rejected at its patch and commit; ``flips``, the nodes
    that flipped, each once per patch and commit, on the day of the attempt where it
    first flipped.

    Returns ``{"buckets": [ISO dates], "after_reject": [count per bucket],
    "flips": [count per bucket]}``.
    """
    starts = bucket_starts(start, end, bucket)
    index = {d: i for i, d in enumerate(starts)}
    counts = {"after_reject": [0] * len(starts), "flips": [0] * len(starts)}
    retries = VerdictBatch.objects.filter(suite=suite, day__gte=start, day__lte=end,
                                          attempt__gte=FIRST_RETRY)
    after = retries_after_reject(retries).values_list("day").annotate(n=Count("pk")).order_by()
    for day, n in after:
        counts["after_reject"][index[bucket_start(day, bucket)]] += n
    # A node first flips in an attempt that sent it: the rows carried from earlier
    # attempts (sent false) never hold a first flip.
    flipped = (NodeVerdict.objects.filter(batch__in=retries, flipped=True, sent=True)
               .values_list("batch__day", "batch__attempt", "attempts").order_by())
    for day, attempt, seen in flipped:
        if seen and first_flip(*rules.NodeAttempts.from_answer(seen).flaky_evidence) == attempt:
            counts["flips"][index[bucket_start(day, bucket)]] += 1
    return {"buckets": [d.isoformat() for d in starts], **counts}


def birth_counts(suite: Suite, *, start: date, end: date, bucket: str = "day") -> dict:
    """Per bucket of [start, end], in one query: ``flaky``, the new tests flaky at birth
    (docs/new-tests.md), each once, on the day of its first report that judged it
    ``new_test_flaky``; ``measured``, every new test the guard measured, each once, on the
    day of its first such report.

    Returns ``{"buckets": [ISO dates], "flaky": [count per bucket], "measured": [count per
    bucket]}``.
    """
    starts = bucket_starts(start, end, bucket)
    index = {d: i for i, d in enumerate(starts)}
    counts = {"flaky": [0] * len(starts), "measured": [0] * len(starts)}
    rows = (Measurement.objects.filter(suite=suite, report__day__gte=start, report__day__lte=end,
                                       reason__in=rules.NEW_TEST_REASONS)
            .values_list("node_id", "reason").annotate(first=Min("report__day")).order_by())
    measured: dict[int, date] = {}
    for node, reason, day in rows:
        if reason == rules.Reason.NEW_TEST_FLAKY:
            counts["flaky"][index[bucket_start(day, bucket)]] += 1
        measured[node] = min(day, measured.get(node, day))
    for day in measured.values():
        counts["measured"][index[bucket_start(day, bucket)]] += 1
    return {"buckets": [d.isoformat() for d in starts], **counts}


# --- Quarantined share and expiries, from the ledger ----------------------------------


@dataclass(frozen=True)
class ShareDay:
    day: date
    quarantined: int  # entries counting toward the share at the end of the day
    size: int  # the test set that day (its CI run, or the nodes the suite knew)

    @property
    def share(self) -> float:
        return rules.quarantined_share(self.quarantined, self.size)


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


class _DayCounts:
    """Counts per day over [start, end], built from half-open day intervals."""

    def __init__(self, start: date, end: date):
        self.start, self.days = start, (end - start).days + 1
        self.delta = [0] * (self.days + 1)

    def add(self, first: date, stop: date, by: int = 1) -> None:
        lo = max(0, (first - self.start).days)
        hi = min(self.days, (stop - self.start).days)
        if lo < hi:
            self.delta[lo] += by
            self.delta[hi] -= by

    def totals(self) -> list[int]:
        return list(accumulate(self.delta[:-1]))


def share_over_time(suite: Suite, *, start: date, end: date) -> list[ShareDay]:
    """The quarantined share (SPEC 2.2) at the end of each day of [start, end].

    The test set is CI's run that sized it that day (``rules.sizing_run_on``, on today's
    default branch); on a day without one, the known nodes: a node counts as known from its
    first sighting to 30 days after its last one, or while it holds an open entry. An entry
    counts from its creation until it is cleared or its expiry passes, unless the node's
    tier now makes it a violation. On today the figures are exactly those of the ledger's
    own share.
    """
    window = timedelta(days=rules.KNOWN_NODE_WINDOW_DAYS)
    after_end = end + timedelta(days=1)
    quarantined, size = _DayCounts(start, end), _DayCounts(start, end)

    nodes = Node.objects.filter(suite=suite)
    # Known on day d: first_seen <= d and last_seen >= d - window (first_seen <= last_seen).
    before = nodes.aggregate(
        seen=Count("pk", filter=Q(first_seen__lte=start)),
        gone=Count("pk", filter=Q(last_seen__lt=start - window)),
    )
    size.add(start, after_end, before["seen"] - before["gone"])
    arriving = nodes.filter(first_seen__gt=start, first_seen__lte=end)
    for day, count in arriving.values_list("first_seen").annotate(c=Count("pk")).order_by():
        size.add(day, after_end, count)
    leaving = nodes.filter(last_seen__gte=start - window, last_seen__lt=end - window)
    for day, count in leaving.values_list("last_seen").annotate(c=Count("pk")).order_by():
        size.add(day + window + timedelta(days=1), after_end, -count)

    entries = (
        QuarantineEntry.objects.filter(suite=suite, created_at__lt=_midnight(after_end))
        .filter(Q(cleared_at__isnull=True) | Q(cleared_at__gte=_midnight(start)))
        .values_list(
            "created_at", "cleared_at", "expires", "node__tier",
            "node__first_seen", "node__last_seen",
        )
    )
    for created_at, cleared_at, expires, tier, first_seen, last_seen in entries:
        opened = created_at.astimezone(UTC).date()
        closed = cleared_at.astimezone(UTC).date() if cleared_at else after_end
        if rules.quarantinable(tier):
            quarantined.add(opened, min(closed, expires + timedelta(days=1)))
        # An open entry keeps its node known outside the node's sighting window.
        if first_seen is None:  # never in an upload: known through its entry alone
            size.add(opened, closed)
        else:
            size.add(opened, min(closed, first_seen))
            size.add(max(opened, last_seen + window + timedelta(days=1)), closed)

    days = [start + timedelta(days=i) for i in range((end - start).days + 1)]
    runs = _ci_runs(suite, start=start, end=end)
    sized = [rules.sizing_run_on(day, runs) for day in days]
    return [
        ShareDay(day, q, run.tests if run else s)
        for day, q, s, run in zip(days, quarantined.totals(), size.totals(), sized, strict=True)
    ]


def _ci_runs(suite: Suite, *, start: date, end: date) -> list[rules.CiRunFacts]:
    """The default branch's CI runs that may have sized the test set on a day of [start,
    end], newest first."""
    runs = CiRun.objects.filter(suite=suite, first_at__lt=_midnight(end + timedelta(days=1)))
    runs = runs.filter(predicates.ci_run_q(start, suite.default_branch))
    return [run.facts for run in runs.order_by("-first_at", "-pk").defer("members")]


def peak_per_bucket(days: list[ShareDay], bucket: str) -> list[tuple[date, ShareDay]]:
    """Each bucket's day with the highest share (the first such day on a tie)."""
    peaks: dict[date, ShareDay] = {}
    for day in days:
        key = bucket_start(day.day, bucket)
        if key not in peaks or day.share > peaks[key].share:
            peaks[key] = day
    return list(peaks.items())


def expiring_per_week(suite: Suite, today: date) -> tuple[int, list[tuple[date, int]]]:
    """Open, non-violating entries already expired, and those expiring in each week ahead
    (weeks counted from today), as far as the suite's longest expiry or the latest entry."""
    rows = (
        QuarantineEntry.objects.filter(suite=suite)
        .for_gate()
        .values_list("expires")
        .annotate(c=Count("pk"))
        .order_by()
    )
    by_day = dict(rows)
    expired = sum(c for day, c in by_day.items() if day < today)
    latest = max((day for day in by_day if day >= today), default=today)
    weeks = max(math.ceil(suite.max_quarantine_days / 7), (latest - today).days // 7 + 1)
    counts = [0] * weeks
    for day, c in by_day.items():
        if day >= today:
            counts[(day - today).days // 7] += c
    return expired, [(today + timedelta(weeks=i), c) for i, c in enumerate(counts)]


# --- Charts, with the table and CSV of the same numbers --------------------------------


def first_data_day(suite: Suite) -> date | None:
    """The suite's first day with anything to chart: its first upload or ledger entry.
    Asked per source, so that the rollups' (suite, source, day) key answers at once."""
    days = [
        ReasonRollup.objects.filter(suite=suite, source=source).aggregate(day=Min("day"))["day"]
        for source in SOURCES
    ]
    entered = QuarantineEntry.objects.filter(suite=suite).aggregate(at=Min("created_at"))["at"]
    days.append(entered and entered.astimezone(UTC).date())
    return min((day for day in days if day), default=None)
