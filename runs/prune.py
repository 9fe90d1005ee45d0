"""Raw upload rows are kept RETENTION_DAYS days, today included: older reports with their
measurements, and older verdict batches with their per-node verdicts, are deleted. The
per-day rollups the trends read, the ledger's entries (their trails included) and the audit
events are kept whole, so the trends and every entry's history stay true.

An upload an entry cites is kept at any age: its address in an entry's evidence, now or in
an audit event's before or after (an earlier evidence), or its report in an entry's trail
(read by ``rules.trail_reports``: a failure CI saw, the trail's other kind of step, cites none).

Deleting goes in chunks (``ledger.locks.delete_in_chunks``, as ``prune_junit`` does), each
its own transaction under its suite's write lock, so the board keeps serving and an
interrupted prune leaves nothing half done. Pruning twice deletes nothing the second time.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime

from django.utils import timezone

from flakeboard.rules import retention_window, trail_reports
from ledger.locks import delete_in_chunks
from ledger.models import AuditEvent, QuarantineEntry
from ledger.predicates import window_q

from .models import Measurement, NodeVerdict, Report, VerdictBatch

CHUNK = 100  # uploads one transaction deletes, with their rows
# An upload's page, as runs/urls.py routes it (and the quarantine form links a report row).
UPLOAD_LINK = re.compile(r"/suites/[-\w]+/(reports|verdicts)/(\d+)(?!\d)")
KIND = {"reports": Report, "verdicts": VerdictBatch}


@dataclass(frozen=True)
class Pruned:
    reports: int
    measurements: int
    batches: int
    verdicts: int
    kept_cited: int  # expired uploads kept because an entry cites them


def _cite(cited: dict, evidence: str | None) -> None:
    for kind, pk in UPLOAD_LINK.findall(evidence or ""):
        cited[KIND[kind]].add(int(pk))


def cited_uploads(*, suite_id: int | None = None, since: datetime | None = None) -> dict:
    """The uploads entries cite, ``{Report: pks, VerdictBatch: pks}``: of every suite, or
    only what ``suite_id``'s audit events written at or after ``since`` cite."""
    cited = {Report: set(), VerdictBatch: set()}
    events = AuditEvent.objects.exclude(entry=None)
    if since is None:
        for evidence, trail in QuarantineEntry.objects.values_list("evidence", "trail").iterator():
            _cite(cited, evidence)
            cited[Report].update(trail_reports(trail))
    else:
        events = events.filter(suite_id=suite_id, at__gte=since)
    for before, after in events.values_list("before__evidence", "after__evidence").iterator():
        _cite(cited, before)
        _cite(cited, after)
    return cited


def _expired(model, days: int, today: date):
    return model.objects.exclude(window_q("day", retention_window(days), today))


def _deleter(model, cited: dict, started: datetime):
    """Delete a suite's chunk of ``model`` uploads, but for those cited, including by an
    entry changed since the prune began (read under the suite's lock, so none slips by)."""
    def delete(suite_id: int, pks: list[int]) -> Counter:
        cited_now = cited[model] | cited_uploads(suite_id=suite_id, since=started)[model]
        return Counter(model.objects.filter(pk__in=pks).exclude(pk__in=cited_now).delete()[1])
    return delete


def prune_uploads(*, days: int, today: date, dry_run: bool = False) -> Pruned:
    """Delete (or with ``dry_run`` only count) the uploads older than ``days`` days."""
    started = timezone.now()
    cited = cited_uploads()
    expired = {model: _expired(model, days, today) for model in KIND.values()}
    kept = sum(qs.filter(pk__in=cited[model]).count() for model, qs in expired.items())
    doomed = {model: qs.exclude(pk__in=cited[model]) for model, qs in expired.items()}
    if dry_run:
        return Pruned(
            doomed[Report].count(), Measurement.objects.filter(report__in=doomed[Report]).count(),
            doomed[VerdictBatch].count(),
            NodeVerdict.objects.filter(batch__in=doomed[VerdictBatch]).count(), kept)
    deleted = Counter()
    for model, rows in doomed.items():
        deleted = delete_in_chunks(rows, CHUNK, _deleter(model, cited, started), deleted)
    label = {model: model._meta.label for model in (Report, Measurement, VerdictBatch,
                                                     NodeVerdict)}
    return Pruned(deleted[label[Report]], deleted[label[Measurement]],
                  deleted[label[VerdictBatch]], deleted[label[NodeVerdict]], kept)

