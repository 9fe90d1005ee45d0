"""Per-day reason-code rollups: bumped inside every ingest transaction, rebuildable from
the raw rows, so the charts' cost does not grow with history."""

from __future__ import annotations

from collections import Counter
from datetime import date

from django.db import connection, transaction
from django.db.models import Count

from flakeboard import rules
from ledger.locks import lock_suite
from ledger.models import Suite

from .models import Measurement, NodeVerdict, ReasonRollup, Report, VerdictBatch

Source = ReasonRollup.Source
# An upload adds one count of its own reason when that reason is an upload-level code.
UPLOAD_LEVEL_REASONS = (rules.Reason.NO_EVIDENCE, rules.Reason.QUARANTINE_CAP_EXCEEDED)


def upload_counts(row_reasons, upload_reason) -> Counter:
    counts = Counter(str(r) for r in row_reasons)
    if upload_reason in UPLOAD_LEVEL_REASONS:
        counts[str(upload_reason)] += 1
    return counts


ROLLUP_KEY = ("suite", "source", "day", "reason")  # its unique constraint's fields


def rollup_add(*, suite: Suite, source: str, day: date, counts: Counter) -> None:
    """Add counts to the day's rollup rows; safe beside concurrent ingests. One statement
    for the lot: each row inserted, or its count added to the stored one (an upsert, which
    both databases take as one atomic step; the ORM's upsert can only overwrite)."""
    if not counts:
        return
    quote = connection.ops.quote_name
    meta = ReasonRollup._meta
    table, count = quote(meta.db_table), quote(meta.get_field("count").column)
    key = ", ".join(quote(meta.get_field(name).column) for name in ROLLUP_KEY)
    values = (suite.pk, str(source), connection.ops.adapt_datefield_value(day))
    params = [value for reason, added in sorted(counts.items())
              for value in (*values, reason, added)]
    rows = ", ".join(["(%s, %s, %s, %s, %s)"] * len(counts))
    with connection.cursor() as cursor:
        # Names from the model's own meta, quoted; the values are parameters.
        cursor.execute(
            f"INSERT INTO {table} ({key}, {count}) VALUES {rows} "  # noqa: S608
            f"ON CONFLICT ({key}) DO UPDATE SET {count} = {table}.{count} + excluded.{count}",
            params)


def counts_from_raw(suite: Suite, since: date | None = None) -> dict[tuple[str, date, str], int]:
    """(source, day, reason) → count, recomputed from the stored rows (of ``since`` on)."""
    counts: Counter = Counter()
    sources = (
        (Source.REPORTS, Measurement.objects.filter(suite=suite), "report__day",
         Report.objects.filter(suite=suite)),
        (Source.VERDICTS, NodeVerdict.objects.filter(suite=suite), "batch__day",
         VerdictBatch.objects.filter(suite=suite)),
    )
    for source, rows, day_field, uploads in sources:
        if since is not None:
            rows = rows.filter(**{f"{day_field}__gte": since})
            uploads = uploads.filter(day__gte=since)
        grouped = rows.values_list(day_field, "reason").annotate(c=Count("pk")).order_by()
        for day, reason, c in grouped:
            counts[(source.value, day, reason)] += c
        upload_level = (
            uploads.filter(reason__in=UPLOAD_LEVEL_REASONS)
            .values_list("day", "reason").annotate(c=Count("pk")).order_by()
        )
        for day, reason, c in upload_level:
            counts[(source.value, day, reason)] += c
    return dict(counts)


def counts_from_rollups(suite: Suite) -> dict[tuple[str, date, str], int]:
    rows = ReasonRollup.objects.filter(suite=suite, count__gt=0)
    return {(r.source, r.day, r.reason): r.count for r in rows}


def rebuild_rollups(suite: Suite, since: date | None = None) -> int:
    """Recompute a suite's rollups from the raw rows, of ``since`` on (the days a prune left
    whole: older rollups outlive their rows and are kept); the number of rollup rows."""
    counts = counts_from_raw(suite, since)
    with transaction.atomic():
        lock_suite(suite.pk)
        rollups = ReasonRollup.objects.filter(suite=suite)
        (rollups if since is None else rollups.filter(day__gte=since)).delete()
        ReasonRollup.objects.bulk_create(
            [
                ReasonRollup(suite=suite, source=source, day=day, reason=reason, count=c)
                for (source, day, reason), c in counts.items()
            ],
            batch_size=1000,
        )
    return len(counts)
