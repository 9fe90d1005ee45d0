"""B3: the trends query (``runs.trend_counts.reason_counts``, per day, for 365 days) on a suite
whose history holds 5M node verdicts, against the same query on a suite with 50k.

The charts read the per-day rollups that ingest keeps, never the verdict rows, so the
history is written as the rollup rows those verdicts would have left: five years of
~2,740 verdicts a day (5M), and one year of ~137 a day (50k), each with as many
measurements. Each history lives in a scratch database of its own, and the two queries
alternate.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import connections
from django.db.models import Sum
from django.utils import timezone

from runs.models import ReasonRollup
from runs.trend_counts import reason_counts

from . import data, routing
from .measure import TIMES, Row, fmt_seconds, interleaved, progress, repeats

ID = "B3"
LIMIT = 1.5
RANGE_DAYS = 365
HISTORIES = {  # alias: (days of history, node verdicts in it at scale 1)
    "default": (5 * 365, 5_000_000),
    "second": (365, 50_000),
}


def _history(alias: str, scale: float, today) -> tuple[object, int, int]:
    days, verdicts = HISTORIES[alias]
    with routing.use(alias):
        suite = data.make_suite("b3")
        rows = data.rollup_rows(suite, days=days, per_day=max(1, round(verdicts * scale / days)),
                                today=today, seed=days, using=alias)
        written = data.insert_rows(ReasonRollup, data.ROLLUP_COLUMNS, rows, using=alias)
        total = ReasonRollup.objects.filter(suite=suite, source="verdicts").aggregate(
            total=Sum("count"))["total"]
    with connections[alias].cursor() as cursor:
        cursor.execute("ANALYZE")
    return suite, written, total


def run(scale: float, backend: str, workdir) -> list[Row]:
    today = timezone.now().date()
    start = today - timedelta(days=RANGE_DAYS - 1)
    progress(f"{ID}: writing the two histories")
    big, big_rows, big_total = _history("default", scale, today)
    small, small_rows, small_total = _history("second", scale, today)

    def query(alias, suite):
        def one(_):
            with routing.use(alias):
                result = reason_counts(suite, start=start, end=today, bucket="day")
            assert len(result["buckets"]) == RANGE_DAYS
        return one

    subjects = {"big": query("default", big), "small": query("second", small)}
    interleaved(subjects, 3)
    rounds = repeats(scale, 60, least=5)
    progress(f"{ID}: {rounds} rounds, the two histories interleaved")
    times = interleaved(subjects, rounds)
    big_s, small_s = times.median("big"), times.median("small")
    return [Row(
        ID, backend, f"trends, {RANGE_DAYS} days, over {big_total:,} node verdicts",
        subject=fmt_seconds(big_s), baseline=f"{fmt_seconds(small_s)} over {small_total:,}",
        goal=f"≤ {LIMIT:g}{TIMES} baseline", ratio=big_s / small_s, limit=LIMIT,
        detail=f"rollup rows: {big_rows:,} against {small_rows:,}, written directly",
        figures={"verdicts": {"big": big_total, "small": small_total},
                 "rollup_rows": {"big": big_rows, "small": small_rows},
                 "subject_s": times.wall["big"], "baseline_s": times.wall["small"]},
    ).judge()]
