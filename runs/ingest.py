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
from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone

from flakeboard import rules
from ledger.audit import bump_ledger_revision
from ledger.locks import lock_suite
from ledger.models import Node, QuarantineEntry, Suite
from ledger.selectors import open_entries_by_node, share_figures, tier_rule_specs

from .models import Measurement, NodeVerdict, Report, VerdictBatch
from .rollups import Source, rollup_add, upload_counts
from .wire import parse_report, parse_signals

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
        for node in Node.objects.filter(suite=suite).named(*chunk):
            found[node.nodeid] = node
    return found


def _nodes_for_upload(suite: Suite, stated: dict[str, int | None], today) -> dict[str, Node]:
    """Every uploaded node id's Node, stored: new ones created, all marked seen today, and
    a stated tier 0 or 1 made sticky (re-tiering a node changes the served ledger)."""
    nodeids = sorted(stated)
    existing = _fetch_nodes(suite, nodeids)
    specs = tier_rule_specs(suite)
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

    Node.objects.bulk_create(new_nodes, batch_size=1000, ignore_conflicts=True)
    existing.update(_fetch_nodes(suite, [node.nodeid for node in new_nodes]))
    unseen = sorted(n.pk for n in existing.values() if n.first_seen is None)
    for chunk in _chunks(unseen):
        Node.objects.filter(pk__in=chunk).update(first_seen=today)
    seen_before = sorted(n.pk for n in existing.values() if n.last_seen != today)
    for chunk in _chunks(seen_before):
        Node.objects.filter(pk__in=chunk).update(last_seen=today)
    if retiered:
        Node.objects.bulk_update(retiered, ["stated_tier", "tier"])
        bump_ledger_revision(suite)
    return existing


def _entry_facts(entry: QuarantineEntry | None) -> rules.EntryFacts | None:
    return None if entry is None else entry.facts


def _entry_state(entry: QuarantineEntry | None, today) -> str:
    return "" if entry is None else entry.state(today).value


def _stored(model, suite: Suite, digest: str) -> IngestOutcome | None:
    upload = model.objects.filter(suite=suite, digest=digest).first()
    if upload is None:
        return None
    if model is Report:
        rows = upload.measurements.select_related("node", "entry")
    else:
        rows = upload.verdicts.select_related("node", "entry")
    rows = list(rows.order_by("position"))
    return IngestOutcome(upload, rows, duplicate=True)


def _ingest(model, suite, digest, dry_run, evaluate_and_store) -> IngestOutcome:
    """Shared frame: duplicate check, one transaction under the suite's write lock, and the
    race of two equal uploads.

    A dry run takes exactly the upload's path, its writes and its lock included, and then
    rolls them back: it answers what the upload would, because it is the upload.
    """
    if dry_run:
        with transaction.atomic():
            lock_suite(suite.pk)
            outcome = evaluate_and_store()
            transaction.set_rollback(True)
        return outcome
    if (stored := _stored(model, suite, digest)) is not None:
        return stored
    try:
        with transaction.atomic():
            lock_suite(suite.pk)
            # An identical upload may have committed while this one waited for the lock.
            if (stored := _stored(model, suite, digest)) is not None:
                return stored
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
    parsed = parse_report(body, query)
    now = now or timezone.now()
    today = now.date()
    digest = upload_digest("report", body, query)

    def evaluate_and_store() -> IngestOutcome:
        stated = {row.nodeid: row.tier for row in parsed.measurements}
        nodes = _nodes_for_upload(suite, stated, today)
        judged = Suite.objects.get(pk=suite.pk)  # the ledger revision and policy now in force
        entries = open_entries_by_node(suite, [n.pk for n in nodes.values()])
        # Judged against the test set with this upload's nodes in it, counted once.
        share = share_figures(judged, today, selected_total=parsed.selected_total)
        policy = judged.policy
        measurements, outcomes = [], []
        for position, row in enumerate(parsed.measurements):
            node = nodes[row.nodeid]
            entry = entries.get(node.pk)
            outcome = rules.gate_measurement(
                n=row.n, fails=row.fails, entry=_entry_facts(entry), policy=policy, today=today
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
                entry=entry, entry_state=_entry_state(entry, today),
            ))
        result = rules.gate_report(outcomes, share=share)
        report = Report(
            suite=suite, created_at=now, day=today, commit=parsed.commit, branch=parsed.branch,
            evidence=parsed.evidence, selected_total=parsed.selected_total, uploaded_by=actor,
            digest=digest, status=result.status.value, reason=result.reason.value,
            exit_code=result.exit_code, quarantined=share.quarantined,
            test_set_size=share.size, share=result.share, max_share=share.cap,
            size_source=share.source.value, cap_exceeded=result.cap_exceeded,
            measurement_count=len(measurements),
            fail_count=sum(o.status is rules.GateStatus.FAIL for o in outcomes),
            warn_count=sum(o.status is rules.GateStatus.WARN for o in outcomes),
        )
        report.judge(judged)
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
    parsed = parse_signals(body, query)
    now = now or timezone.now()
    today = now.date()
    digest = upload_digest("signals", body, query)

    def evaluate_and_store() -> IngestOutcome:
        stated = {record.node: record.tier for record in parsed.records}
        nodes = _nodes_for_upload(suite, stated, today)
        judged = Suite.objects.get(pk=suite.pk)  # the ledger revision, policy and pin now
        entries = open_entries_by_node(suite, [n.pk for n in nodes.values()])
        pin = judged.fixture_pin
        verdicts, outcomes = [], []
        for position, record in enumerate(parsed.records):
            node = nodes[record.node]
            entry = entries.get(node.pk)
            facts = _entry_facts(entry)
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
                entry=entry, entry_state=_entry_state(entry, today),
            ))
        verdict, reason = rules.aggregate_reason(outcomes)
        counts = upload_counts((o.reason for o in outcomes), reason)
        batch = VerdictBatch(
            suite=suite, created_at=now, day=today, patch=parsed.patch, commit=parsed.commit,
            evidence=parsed.evidence, uploaded_by=actor, digest=digest,
            verdict=verdict.value, reason=reason.value, exit_code=rules.EXIT_CODES[verdict],
            record_count=len(verdicts), reason_counts=dict(sorted(counts.items())),
            pin_manifest=pin.manifest if pin else "", pin_seed=pin.seed if pin else None,
        )
        batch.judge(judged)
        if not dry_run:
            batch.save()
            for v in verdicts:
                v.batch = batch
            NodeVerdict.objects.bulk_create(verdicts, batch_size=2000)
            rollup_add(suite=suite, source=Source.VERDICTS, day=today, counts=counts)
        return IngestOutcome(batch, verdicts, dry_run=dry_run)

    return _ingest(VerdictBatch, suite, digest, dry_run, evaluate_and_store)
