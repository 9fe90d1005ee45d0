"""Ingest services: validate an upload whole, evaluate it against the ledger, and store it
with its rollups in one transaction. ``dry_run`` evaluates the same way and stores nothing.

The same body (with the same metadata) uploaded twice is stored once: the second upload
answers with the stored result, marked as a duplicate.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from flakeboard import rules
from ledger.models import Node, QuarantineEntry, Suite
from ledger.quarantine import bump_ledger_revision
from ledger.selectors import ShareFigures, known_nodes, open_entries_by_node, tier_rule_specs

from .models import Measurement, NodeVerdict, Report, VerdictBatch
from .rollups import Source, rollup_add, upload_counts
from .validation import load_json, parse_report, parse_signals

CHUNK = 500


@dataclass
class IngestOutcome:
    upload: Report | VerdictBatch
    rows: list  # Measurement or NodeVerdict, each with .node loaded
    duplicate: bool = False
    dry_run: bool = False


def upload_digest(kind: str, body: bytes, meta: dict) -> str:
    digest = hashlib.sha256(kind.encode() + b"\0")
    digest.update(json.dumps(sorted((k, str(v)) for k, v in meta.items() if v)).encode())
    digest.update(b"\0" + body)
    return digest.hexdigest()


def _chunks(items: list, size: int = CHUNK) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _fetch_nodes(suite: Suite, nodeids: list[str]) -> dict[str, Node]:
    found = {}
    for chunk in _chunks(nodeids):
        for node in Node.objects.filter(suite=suite, nodeid__in=chunk):
            found[node.nodeid] = node
    return found


def _nodes_for_upload(
    suite: Suite, stated: dict[str, int | None], today, *, store: bool
) -> tuple[dict[str, Node], int]:
    """Every uploaded node id's Node (unsaved ones in a dry run), and how many of them
    join the set of known nodes by this upload."""
    nodeids = sorted(stated)
    existing = _fetch_nodes(suite, nodeids)
    specs = tier_rule_specs(suite)
    cutoff = today - timedelta(days=rules.KNOWN_NODE_WINDOW_DAYS)
    stale = [node for node in existing.values() if node.last_seen < cutoff]
    with_entry = set(
        QuarantineEntry.objects.open()
        .filter(node__in=[n.pk for n in stale])
        .values_list("node_id", flat=True)
    ) if stale else set()
    joining = len(nodeids) - len(existing) + sum(1 for n in stale if n.pk not in with_entry)

    new_nodes, retiered = [], []
    for nodeid in nodeids:
        node = existing.get(nodeid)
        if node is None:
            sticky = rules.sticky_tier(None, stated[nodeid])
            new_nodes.append(Node(
                suite=suite, nodeid=nodeid, stated_tier=sticky,
                tier=rules.resolve_tier(nodeid, specs, sticky).tier,
                first_seen=today, last_seen=today,
            ))
        elif (sticky := rules.sticky_tier(node.stated_tier, stated[nodeid])) != node.stated_tier:
            node.stated_tier = sticky
            node.tier = rules.resolve_tier(nodeid, specs, sticky).tier
            retiered.append(node)
    if not store:
        existing.update((node.nodeid, node) for node in new_nodes)
        return existing, joining

    Node.objects.bulk_create(new_nodes, batch_size=1000, ignore_conflicts=True)
    existing.update(_fetch_nodes(suite, [node.nodeid for node in new_nodes]))
    seen_before = sorted(n.pk for n in existing.values() if n.last_seen != today)
    for chunk in _chunks(seen_before):
        Node.objects.filter(pk__in=chunk).update(last_seen=today)
    if retiered:
        Node.objects.bulk_update(retiered, ["stated_tier", "tier"])
        bump_ledger_revision(suite)
    return existing, joining


def _share(suite: Suite, today, joining: int, selected_total: int | None) -> ShareFigures:
    quarantined = QuarantineEntry.objects.filter(suite=suite).counting_for_share(today).count()
    if selected_total is not None:
        size = selected_total
    else:
        size = known_nodes(suite, today).count() + joining
    return ShareFigures(quarantined, size, suite.max_quarantined_share)


def _stored(model, suite: Suite, digest: str) -> IngestOutcome | None:
    upload = model.objects.filter(suite=suite, digest=digest).first()
    if upload is None:
        return None
    if model is Report:
        rows = upload.measurements.select_related("node", "entry")
    else:
        rows = upload.verdicts.select_related("node")
    rows = list(rows.order_by("position"))
    return IngestOutcome(upload, rows, duplicate=True)


def _ingest(model, suite, digest, dry_run, evaluate_and_store) -> IngestOutcome:
    """Shared frame: duplicate check, one transaction, and the race of two equal uploads."""
    if not dry_run and (stored := _stored(model, suite, digest)) is not None:
        return stored
    if dry_run:
        with transaction.atomic():
            return evaluate_and_store()
    try:
        with transaction.atomic():
            return evaluate_and_store()
    except IntegrityError:
        # An identical upload committed first: answer with what it stored.
        if (stored := _stored(model, suite, digest)) is not None:
            return stored
        raise


def report_ingest(
    *,
    suite: Suite,
    body: bytes,
    actor: str,
    query: dict | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
) -> IngestOutcome:
    """Ingest a flake-report.json (a bare list, or the envelope form)."""
    query = {k: v for k, v in (query or {}).items() if k in ("commit", "branch", "evidence")}
    parsed = parse_report(load_json(body), query)
    now = now or timezone.now()
    today = now.date()
    digest = upload_digest("report", body, query)

    def evaluate_and_store() -> IngestOutcome:
        stated = {row.nodeid: row.tier for row in parsed.rows}
        nodes, joining = _nodes_for_upload(suite, stated, today, store=not dry_run)
        entries = open_entries_by_node(suite, [n.pk for n in nodes.values() if n.pk])
        share = _share(suite, today, joining, parsed.selected_total)
        policy = suite.policy
        measurements, outcomes = [], []
        for position, row in enumerate(parsed.rows):
            node = nodes[row.nodeid]
            entry = entries.get(node.pk) if node.pk else None
            facts = None
            if entry is not None:
                facts = rules.EntryFacts(entry.expires, node.tier < rules.Tier.REPEAT_BUDGET)
            outcome = rules.gate_measurement(
                n=row.n, fails=row.fails, entry=facts, policy=policy, today=today
            )
            outcomes.append(outcome)
            flags = []
            if rules.upper95_mismatch(row.upper95, row.fails, row.n):
                flags.append(rules.Flag.UPPER95_MISMATCH.value)
            measurements.append(Measurement(
                suite=suite, node=node, position=position, created_at=now, n=row.n,
                fails=row.fails, upper95=rules.upper95(row.fails, row.n),
                reported_upper95=row.upper95, seed_base=row.seed_base,
                status=outcome.status.value, reason=outcome.reason.value, flags=flags,
                entry=entry,
            ))
        result = rules.gate_report(
            outcomes, quarantined=share.quarantined, test_set_size=share.size, policy=policy
        )
        report = Report(
            suite=suite, created_at=now, day=today, commit=parsed.commit, branch=parsed.branch,
            evidence=parsed.evidence, selected_total=parsed.selected_total, uploaded_by=actor,
            digest=digest, status=result.status.value, reason=result.reason.value,
            exit_code=result.exit_code, quarantined=share.quarantined,
            test_set_size=share.size, share=result.share, max_share=share.cap,
            measurement_count=len(measurements),
            fail_count=sum(o.status is rules.GateStatus.FAIL for o in outcomes),
            warn_count=sum(o.status is rules.GateStatus.WARN for o in outcomes),
        )
        if not dry_run:
            report.save()
            for m in measurements:
                m.report = report
            Measurement.objects.bulk_create(measurements, batch_size=2000)
            rollup_add(
                suite=suite, source=Source.REPORTS, day=today,
                counts=upload_counts((o.reason for o in outcomes), result.reason),
            )
        return IngestOutcome(report, measurements, dry_run=dry_run)

    return _ingest(Report, suite, digest, dry_run, evaluate_and_store)


def signals_ingest(
    *,
    suite: Suite,
    body: bytes,
    actor: str,
    query: dict | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
) -> IngestOutcome:
    """Ingest signal records (a bare list, or the envelope form) and arbitrate each."""
    query = {k: v for k, v in (query or {}).items() if k in ("patch", "commit", "evidence")}
    parsed = parse_signals(load_json(body), query)
    now = now or timezone.now()
    today = now.date()
    digest = upload_digest("signals", body, query)

    def evaluate_and_store() -> IngestOutcome:
        stated = {record.node: record.tier for record in parsed.records}
        nodes, _ = _nodes_for_upload(suite, stated, today, store=not dry_run)
        entries = open_entries_by_node(suite, [n.pk for n in nodes.values() if n.pk])
        pin = suite.fixture_pin
        verdicts, outcomes = [], []
        for position, record in enumerate(parsed.records):
            node = nodes[record.node]
            entry = entries.get(node.pk) if node.pk else None
            facts = None
            if entry is not None:
                facts = rules.EntryFacts(entry.expires, node.tier < rules.Tier.REPEAT_BUDGET)
            outcome = rules.evaluate_record(record, ledger_entry=facts, pin=pin, today=today)
            outcomes.append(outcome)
            verdicts.append(NodeVerdict(
                suite=suite, node=node, position=position, created_at=now,
                property_check=record.property_check.value,
                fixture_lock=record.fixture_lock.value,
                flake_status=record.flake_status.value,
                fixture_manifest=record.fixture_manifest, seed=record.seed,
                freeze_expires=record.freeze_expires, stated_tier=record.tier,
                effective_lock=outcome.fixture_lock.value,
                effective_status=outcome.flake_status.value,
                verdict=outcome.verdict.value, reason=outcome.reason.value,
                flags=[f.value for f in outcome.flags],
            ))
        verdict, reason = rules.aggregate_reason(outcomes)
        counts = upload_counts((o.reason for o in outcomes), reason)
        batch = VerdictBatch(
            suite=suite, created_at=now, day=today, patch=parsed.patch, commit=parsed.commit,
            evidence=parsed.evidence, uploaded_by=actor, digest=digest,
            verdict=verdict.value, reason=reason.value, exit_code=rules.EXIT_CODES[verdict],
            record_count=len(verdicts), reason_counts=dict(sorted(counts.items())),
        )
        if not dry_run:
            batch.save()
            for v in verdicts:
                v.batch = batch
            NodeVerdict.objects.bulk_create(verdicts, batch_size=2000)
            rollup_add(suite=suite, source=Source.VERDICTS, day=today, counts=counts)
        return IngestOutcome(batch, verdicts, dry_run=dry_run)

    return _ingest(VerdictBatch, suite, digest, dry_run, evaluate_and_store)
