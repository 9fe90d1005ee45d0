"""Reason-code counts over a date range, read from the per-day rollups only, so the cost
depends on the range, never on how much history the suite holds."""

from __future__ import annotations

from datetime import date, timedelta

from django.db.models import Sum

from ledger.models import Suite

from .models import ReasonRollup

BUCKETS = ("day", "week")


def bucket_start(day: date, bucket: str) -> date:
    """The first day of the bucket holding ``day`` (weeks start on Monday)."""
    return day - timedelta(days=day.weekday()) if bucket == "week" else day


def bucket_starts(start: date, end: date, bucket: str) -> list[date]:
    step = timedelta(days=7 if bucket == "week" else 1)
    first = bucket_start(start, bucket)
    return [first + i * step for i in range((end - first) // step + 1)]


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
