"""The evidence stored earlier at one commit, as an upload adds to it (SPEC 2.4a).

A verdict batch is an attempt of the gate at its ``patch`` and ``commit``, a flake report
one at its ``commit``, numbered from 1. The latest stored batch holds a row for every node
of the attempts before it, each with the node's merged evidence so far, so the next attempt
reads that one batch, not all of them. A flake report pools with the earlier reports'
measurements of its nodes at its ``commit``.

Every upload holds its suite's lock (``ledger.locks``) while it reads these and stores
itself, so two attempts sent at the same moment are judged one after the other: the second
always sees the first.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import date
from functools import cache
from typing import NamedTuple

from django.urls import reverse

from flakeboard import rules
from web.bulk import plain_rows

from .models import Measurement, Report, VerdictBatch

ID_CHUNK = 5000  # node ids per IN list, far under SQLite's variable limit


class PriorRecord(NamedTuple):
    """A node's latest record at the patch and commit (its signals as sent, in the order
    ``rules.SignalRecord`` takes them after the node) and its merged evidence so far."""

    nodeid: str
    signals: tuple
    merged: rules.NodeAttempts


def _same_gate(model, suite_id: int, commit: str, patch: str):
    """The uploads of ``model`` at one commit (and, for batches, one patch)."""
    same = model.objects.filter(suite_id=suite_id, commit=commit)
    return same.filter(patch=patch) if model is VerdictBatch else same


def latest_attempt(model, suite_id: int, commit: str, patch: str = ""):
    """The latest stored upload of ``model`` at ``commit`` (and ``patch``); None for the
    first, and for an upload without a commit, which is an attempt of its own."""
    if not commit:
        return None
    return _same_gate(model, suite_id, commit, patch).order_by("-attempt", "-pk").first()


def next_attempt(latest) -> int:
    return latest.attempt + 1 if latest else 1


PRIOR_VALUES = (
    "node_id", "node__nodeid", "property_check", "fixture_lock", "flake_status",
    "fixture_manifest", "seed", "freeze_expires", "stated_tier", "effective_lock", "attempts",
)


def prior_records(batch: VerdictBatch | None) -> dict[int, PriorRecord]:
    """Each node of the attempts up to ``batch``, by node pk (none before a first attempt).
    Read as the driver gives the values: a whole suite's rows, whose attempts are a few
    distinct JSON texts, each parsed once."""
    if batch is None:
        return {}
    merged_of = cache(lambda seen, worst, check: (
        rules.NodeAttempts.from_answer(json.loads(seen), rules.FixtureLock(worst))
        if seen is not None
        # A row stored before attempts were kept: its batch's own record.
        else rules.add_attempt(None, batch.attempt, rules.PropertyCheck(check),
                               rules.FixtureLock(worst))))
    signals_of = cache(lambda check, lock, status: (
        rules.PropertyCheck(check), rules.FixtureLock(lock), rules.FlakeStatus(status)))
    day = cache(lambda value: date.fromisoformat(value) if isinstance(value, str) else value)
    prior = {}
    rows = batch.verdicts.order_by("position").values_list(*PRIOR_VALUES)
    for node_pk, nodeid, check, lock, status, manifest, seed, freeze, tier, worst, seen \
            in plain_rows(rows, ID_CHUNK):
        if seen is not None and not isinstance(seen, str):  # psycopg decodes jsonb itself
            seen = json.dumps(seen)
        prior[node_pk] = PriorRecord(
            nodeid, (*signals_of(check, lock, status), manifest, seed,
                     None if freeze is None else day(freeze), tier),
            merged_of(seen, worst, check))
    return prior


def earlier_attempts(upload: Report | VerdictBatch, *, replay: bool = False) -> list[dict]:
    """The uploads stored before ``upload`` at its commit (and patch), first first: each
    one's number, id, page and answer (which judged the evidence up to it). For a replay
    of ``upload``, every other one stored at its gate: it is judged with all of them."""
    if not upload.commit or (upload.attempt <= 1 and not replay):
        return []
    model = type(upload)
    page, outcome = ("report", "status") if model is Report else ("batch", "verdict")
    slug = upload.suite.slug
    same = _same_gate(model, upload.suite_id, upload.commit, getattr(upload, "patch", ""))
    others = same.exclude(pk=upload.pk) if replay else same.filter(attempt__lt=upload.attempt)
    earlier = others.order_by("attempt", "pk").values_list("attempt", "pk", outcome)
    return [{"attempt": attempt, "id": pk, "url": reverse(page, args=[slug, pk]),
             outcome: said} for attempt, pk, said in earlier]


def earlier_measurements(suite_id: int, commit: str, node_pks: list[int]
                         ) -> tuple[int, dict[int, list[tuple[int, rules.SeededCounts]]]]:
    """The attempt a new report at ``commit`` is (as ``next_attempt`` of its
    ``latest_attempt``), and the measurements of ``node_pks`` in the reports stored at
    ``commit``, by node pk: each (report id, its counts and seeds). One read of the
    commit's reports answers both. A report without a commit is a first attempt, with
    none."""
    found = defaultdict(list)
    if not commit:
        return 1, found
    reports = dict(Report.objects.filter(suite_id=suite_id, commit=commit)
                   .values_list("pk", "attempt"))
    if not reports:
        return 1, found
    wanted = set(node_pks)
    measurements = (Measurement.objects.filter(report_id__in=list(reports))
                    .order_by("report_id", "position")
                    .values_list("node_id", "report_id", "n", "fails", "seed_base"))
    for node_pk, report, n, fails, seed_base in plain_rows(measurements, ID_CHUNK):
        if node_pk in wanted:
            found[node_pk].append((report, rules.SeededCounts(n, fails, seed_base)))
    return max(reports.values()) + 1, found


def pooled_answer(n: int, fails: int, reports: list[int]) -> dict:
    """A measurement's pooled counts as the answer gives them."""
    return {"n": n, "fails": fails, "upper95": round(rules.upper95(fails, n), 4),
            "reports": reports}


def flipped_nodes(batch: VerdictBatch) -> list[tuple[str, str]]:
    """The nodes (id, page key) that failed in one attempt up to ``batch`` and passed in
    another: flaky evidence (SPEC 2.4a)."""
    return list(batch.verdicts.filter(flipped=True).order_by("position")
                .values_list("node__nodeid", "node__key"))
