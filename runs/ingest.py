"""Ingest services: validate an upload whole, evaluate it against the ledger, and store it
with its rollups in one transaction. ``dry_run`` evaluates the same way and stores nothing.

The same body (with the same metadata) uploaded twice is stored once: the second upload
answers with the stored result, marked as a duplicate.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime
from functools import cache
from typing import NamedTuple

from django.conf import settings
from django.db import connection, transaction
from django.db.models import BooleanField, ExpressionWrapper, Q
from django.utils import timezone

from flakeboard import rules
from ledger.audit import bump_ledger_revision
from ledger.clearance import measurements_seen
from ledger.locks import lock_suite
from ledger.models import Node, QuarantineEntry, Suite, text_key
from ledger.selectors import open_entries_by_node, share_figures, tier_rule_specs
from ledger.wire import UploadInvalid
from web.bulk import cycle_collector_paused, insert_plain, plain_rows, update_pks
from web.metrics import observed
from web.stored_once import stored_once

from .models import Measurement, NodeVerdict, Report, VerdictBatch
from .rollups import Source, rollup_add, upload_counts
from .wire import parse_report, parse_signals

CHUNK = 5000  # ids per IN list: far under SQLite's variable limit (32,766)
INSERT_CHUNK = 10_000  # rows per insert statement or COPY


@dataclass
class IngestOutcome:
    upload: Report | VerdictBatch
    rows: list[dict]  # each row's answer, as the API shows it (runs.results)
    duplicate: bool = False
    dry_run: bool = False


class SeenNode(NamedTuple):
    """A node as an upload needs it: read as plain values, not as a model instance."""

    pk: int
    stated_tier: int | None
    never_seen: bool  # by any upload: quarantined by hand only
    seen_today: bool | None


NODE_VALUES = ("nodeid", "pk", "stated_tier", "never_seen", "seen_today")
NODE_COLUMNS = ("suite_id", "nodeid", "key", "stated_tier", "tier", "first_seen", "last_seen")


def upload_digest(kind: str, body: bytes, meta: dict) -> str:
    digest = hashlib.sha256(kind.encode() + b"\0")
    digest.update(json.dumps(sorted((k, str(v)) for k, v in meta.items() if v)).encode())
    digest.update(b"\0" + body)
    return digest.hexdigest()


def _chunks(items: list, size: int = CHUNK) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _fetch_nodes(suite: Suite, nodeids: list[str], today: date) -> dict[str, SeenNode]:
    """The stored nodes among ``nodeids``: by key for a few, and for many (most of a suite,
    as a CI upload is) the suite's nodes in one read, kept when named."""
    nodes = Node.objects.filter(suite=suite).annotate(
        never_seen=ExpressionWrapper(Q(first_seen__isnull=True), output_field=BooleanField()),
        seen_today=ExpressionWrapper(Q(last_seen=today), output_field=BooleanField()),
    )
    if len(nodeids) <= CHUNK:
        found = plain_rows(nodes.named(*nodeids).values_list(*NODE_VALUES), CHUNK)
        return {nodeid: SeenNode(*values) for nodeid, *values in found}
    wanted = set(nodeids)
    return {
        nodeid: SeenNode(*values)
        for nodeid, *values in plain_rows(nodes.values_list(*NODE_VALUES), CHUNK)
        if nodeid in wanted
    }


def _nodes_for_upload(suite: Suite, stated: dict[str, int | None], today) -> dict[str, SeenNode]:
    """Every uploaded node id's node, stored: new ones created, all marked seen today, and
    a stated tier 0 or 1 made sticky (re-tiering a node changes the served ledger)."""
    nodeids = sorted(stated)
    existing = _fetch_nodes(suite, nodeids, today)
    specs = tier_rule_specs(suite)
    day = connection.ops.adapt_datefield_value(today)
    new_nodes, retiered = [], defaultdict(list)
    for nodeid in nodeids:
        node = existing.get(nodeid)
        if node is None:
            sticky = rules.sticky_tier(None, stated[nodeid])
            new_nodes.append((suite.pk, nodeid, text_key(nodeid), sticky,
                              rules.resolve_tier(nodeid, specs, sticky).tier, day, day))
        elif (sticky := rules.sticky_tier(node.stated_tier, stated[nodeid])) != node.stated_tier:
            retiered[sticky, rules.resolve_tier(nodeid, specs, sticky).tier].append(node.pk)

    # No conflict to ignore: every writer of the suite's nodes holds its lock (lock_suite).
    _insert(Node, NODE_COLUMNS, new_nodes)
    existing.update(_fetch_nodes(suite, [row[1] for row in new_nodes], today))
    update_pks(Node, sorted(n.pk for n in existing.values() if n.never_seen), first_seen=today)
    update_pks(Node, sorted(n.pk for n in existing.values() if not n.seen_today),
               last_seen=today)
    for (sticky, tier), pks in sorted(retiered.items()):
        update_pks(Node, sorted(pks), stated_tier=sticky, tier=tier)
    if retiered:
        bump_ledger_revision(suite)
    return existing


NO_ENTRY = (None, None, "", None)


def entries_at_upload(entries: dict[int, QuarantineEntry], today: date) -> dict[int, tuple]:
    """Each node's open entry as the rows need it, by node: (entry id, facts for the rules,
    state, answer summary). A node without one is not in it: ``NO_ENTRY``."""
    at_upload = {}
    for node_pk, entry in entries.items():
        state = entry.state(today).value
        at_upload[node_pk] = (entry.pk, entry.facts, state,
                              _entry_answer(entry.pk, entry.owner, entry.expires, state))
    return at_upload


class JsonText:
    """A list as the JSON text the database stores, made once per distinct list."""

    def __init__(self):
        self._made: dict[tuple, str] = {}

    def __call__(self, items) -> str:
        key = tuple(items)
        if key not in self._made:
            self._made[key] = json.dumps(list(key))
        return self._made[key]


def _entry_answer(entry_id, owner, expires, state) -> dict | None:
    if entry_id is None:
        return None
    # tier and tier_rule are set for a tier violation by results.explain_violations.
    return {"id": entry_id, "owner": owner, "expires": expires.isoformat(),
            "state": state or None, "tier": None, "tier_rule": None}


ENTRY_VALUES = ("entry_id", "entry__owner", "entry__expires", "entry_state")


def _stored_rows(model, upload) -> list[dict]:
    """The stored rows' answers, read as plain values."""
    if model is Report:
        names = ("node__nodeid", "status", "reason", "n", "fails", "upper95",
                 "reported_upper95", "flags", "classification", *ENTRY_VALUES)
        return [
            {"nodeid": nodeid, "status": status, "reason": reason, "n": n, "fails": fails,
             "upper95": round(upper95, 4), "reported_upper95": reported, "flags": flags,
             "classification": kind or None, "entry": _entry_answer(*entry)}
            for nodeid, status, reason, n, fails, upper95, reported, flags, kind, *entry
            in upload.measurements.order_by("position").values_list(*names)
        ]
    names = ("node__nodeid", "verdict", "reason", "flags", "effective_lock",
             "effective_status", *ENTRY_VALUES)
    return [
        {"node": nodeid, "verdict": verdict, "reason": reason, "flags": flags,
         "fixture_lock": lock, "flake_status": status, "entry": _entry_answer(*entry)}
        for nodeid, verdict, reason, flags, lock, status, *entry
        in upload.verdicts.order_by("position").values_list(*names)
    ]


def stored_outcome(upload: Report | VerdictBatch) -> IngestOutcome:
    """A stored upload as the same body uploaded again finds it: its answer, a duplicate
    (the read API's GET of a report or batch answers exactly this)."""
    return IngestOutcome(upload, _stored_rows(type(upload), upload), duplicate=True)


def _stored(model, suite: Suite, digest: str) -> IngestOutcome | None:
    upload = model.objects.filter(suite=suite, digest=digest).first()
    return None if upload is None else stored_outcome(upload)


def _insert(model, attnames, rows: list[tuple]) -> None:
    for chunk in _chunks(rows, INSERT_CHUNK):
        insert_plain(model, attnames, chunk)


def _ingest(model, suite, digest, dry_run, evaluate_and_store) -> IngestOutcome:
    """Shared frame: the upload stored once (``web.stored_once``), or a dry run.

    A dry run takes exactly the upload's path, its writes and its lock included, and then
    rolls them back: it answers what the upload would, because it is the upload.
    """
    if dry_run:
        with transaction.atomic():
            lock_suite(suite.pk)
            outcome = evaluate_and_store()
            transaction.set_rollback(True)
        return outcome
    return stored_once(suite, lambda: _stored(model, suite, digest),
                       lambda _locked: evaluate_and_store())


class Decision(NamedTuple):
    """The arbiter's outcome for one combination of signals and entry, the values a verdict
    row stores for it (from the record's signals to its flags), and the record's answer
    without its node and entry."""

    outcome: rules.ArbiterOutcome
    stored: tuple
    answer: dict


MEASUREMENT_COLUMNS = (
    "suite_id", "report_id", "node_id", "position", "created_at", "n", "fails", "upper95",
    "reported_upper95", "seed_base", "classification", "status", "reason", "flags", "entry_id",
    "entry_state",
)
VERDICT_COLUMNS = (
    "suite_id", "batch_id", "node_id", "position", "created_at", "property_check",
    "fixture_lock", "flake_status", "fixture_manifest", "seed", "freeze_expires",
    "stated_tier", "effective_lock", "effective_status", "verdict", "reason", "flags",
    "entry_id", "entry_state",
)


def _received(kind: str, parse, names: tuple[str, ...], body: bytes, query: dict | None):
    """The upload parsed whole (a bare list takes the metadata ``names`` from the query),
    and its digest: the same body with the same metadata is stored once."""
    query = {k: v for k, v in (query or {}).items() if k in names}
    return parse(body, query, settings.UPLOAD_MAX_RECORDS), upload_digest(kind, body, query)


def _judging(suite: Suite, stated: dict[str, int | None], today: date):
    """What every row is judged with: the upload's nodes, stored and seen today; the suite
    as it is now in force (its ledger revision, policy and pin, read after the nodes may
    have bumped the revision); and each node's open entry."""
    nodes = _nodes_for_upload(suite, stated, today)
    judged = Suite.objects.get(pk=suite.pk)
    entries = entries_at_upload(
        open_entries_by_node(suite, [n.pk for n in nodes.values()]), today)
    return nodes, judged, entries


@cycle_collector_paused()
@observed("report", (UploadInvalid,))
def report_ingest(*, suite: Suite, body: bytes, actor: str, query: dict | None = None,
                  dry_run: bool = False, now: datetime | None = None) -> IngestOutcome:
    """Ingest a flake-report.json (a bare list, or the envelope form)."""
    parsed, digest = _received("report", parse_report, ("commit", "branch", "evidence"),
                               body, query)
    now = now or timezone.now()
    today = now.date()

    def evaluate_and_store() -> IngestOutcome:
        nodes, judged, entries = _judging(
            suite, {row.nodeid: row.tier for row in parsed.measurements}, today)
        # Judged against the test set with this upload's nodes in it, counted once.
        share = share_figures(judged, today, selected_total=parsed.selected_total)
        policy = judged.policy
        gate = cache(lambda n, fails, facts: rules.gate_measurement(
            n=n, fails=fails, entry=facts, policy=policy, today=today))
        bound = cache(rules.upper95)
        mismatch = cache(rules.upper95_mismatch)
        flags_text = JsonText()
        stored_at = connection.ops.adapt_datetimefield_value(now)
        rows, answers, outcomes, measured = [], [], [], {}
        for position, row in enumerate(parsed.measurements):
            node_pk = nodes[row.nodeid].pk
            entry_id, facts, state, entry_answer = entries.get(node_pk, NO_ENTRY)
            if entry_id is not None:
                measured[entry_id] = (row.n, row.fails)
            outcome = gate(row.n, row.fails, facts)
            outcomes.append(outcome)
            flags = [rules.Flag.UPPER95_MISMATCH.value] if mismatch(
                row.upper95, row.fails, row.n) else []
            upper95 = bound(row.fails, row.n)
            status, reason = outcome.status.value, outcome.reason.value
            kind = None if row.classification is None else row.classification.value
            rows.append((
                suite.pk, None, node_pk, position, stored_at, row.n, row.fails, upper95,
                row.upper95, row.seed_base, kind or "", status, reason, flags_text(flags),
                entry_id, state,
            ))
            answers.append({
                "nodeid": row.nodeid, "status": status, "reason": reason, "n": row.n,
                "fails": row.fails, "upper95": round(upper95, 4),
                "reported_upper95": row.upper95, "flags": flags, "classification": kind,
                "entry": entry_answer,
            })
        result = rules.gate_report(outcomes, share=share)
        report = Report(
            suite=suite, created_at=now, day=today, commit=parsed.commit, branch=parsed.branch,
            evidence=parsed.evidence, selected_total=parsed.selected_total, uploaded_by=actor,
            digest=digest, status=result.status.value, reason=result.reason.value,
            exit_code=result.exit_code, quarantined=share.quarantined,
            test_set_size=share.size, share=result.share, max_share=share.cap,
            size_source=share.source.value, cap_exceeded=result.cap_exceeded,
            measurement_count=len(rows),
            fail_count=sum(o.status is rules.GateStatus.FAIL for o in outcomes),
            warn_count=sum(o.status is rules.GateStatus.WARN for o in outcomes),
        )
        report.judge(judged)
        if not dry_run:
            report.save()
            _insert(Measurement, MEASUREMENT_COLUMNS,
                    [(r[0], report.pk, *r[2:]) for r in rows])
            # Release when fixed: each entry's trail and ready flag, in this transaction.
            measurements_seen(suite=judged, report=report.pk, measured=measured, now=now)
            rollup_add(
                suite=suite, source=Source.REPORTS, day=today,
                counts=upload_counts((o.reason for o in outcomes), result.reason),
            )
        return IngestOutcome(report, answers, dry_run=dry_run)

    return _ingest(Report, suite, digest, dry_run, evaluate_and_store)


@cycle_collector_paused()
@observed("signals", (UploadInvalid,))
def signals_ingest(*, suite: Suite, body: bytes, actor: str, query: dict | None = None,
                   dry_run: bool = False, now: datetime | None = None) -> IngestOutcome:
    """Ingest signal records (a bare list, or the envelope form) and arbitrate each."""
    parsed, digest = _received("signals", parse_signals, ("patch", "commit", "evidence"),
                               body, query)
    now = now or timezone.now()
    today = now.date()

    def evaluate_and_store() -> IngestOutcome:
        nodes, judged, entries = _judging(
            suite, {record.node: record.tier for record in parsed.records}, today)
        pin = judged.fixture_pin
        # The arbiter's answer depends on the record's signals and the entry, never on the
        # node's name: decided once per distinct combination, with the values it stores and
        # answers.
        flags_text = JsonText()
        day_text = cache(connection.ops.adapt_datefield_value)

        @cache
        def decide(signals: tuple, facts: rules.EntryFacts | None) -> Decision:
            outcome = rules.evaluate_record(rules.SignalRecord("", *signals), ledger_entry=facts,
                                            pin=pin, today=today)
            check, lock, status, manifest, seed, freeze, tier = signals
            flags = [f.value for f in outcome.flags]
            answer = {"verdict": outcome.verdict.value, "reason": outcome.reason.value,
                      "flags": flags, "fixture_lock": outcome.fixture_lock.value,
                      "flake_status": outcome.flake_status.value}
            stored = (check.value, lock.value, status.value, manifest, seed, day_text(freeze),
                      tier, answer["fixture_lock"], answer["flake_status"], answer["verdict"],
                      answer["reason"], flags_text(flags))
            return Decision(outcome, stored, answer)

        judged_rows, answers = [], []
        for record in parsed.records:
            node_pk = nodes[record.node].pk
            entry_id, facts, state, entry_answer = entries.get(node_pk, NO_ENTRY)
            decision = decide((
                record.property_check, record.fixture_lock, record.flake_status,
                record.fixture_manifest, record.seed, record.freeze_expires, record.tier,
            ), facts)
            judged_rows.append((node_pk, decision, entry_id, state))
            answers.append({"node": record.node, **decision.answer, "entry": entry_answer})
        outcomes = [decision.outcome for _, decision, _, _ in judged_rows]
        verdict, reason = rules.aggregate_reason(outcomes)
        counts = upload_counts((o.reason for o in outcomes), reason)
        batch = VerdictBatch(
            suite=suite, created_at=now, day=today, patch=parsed.patch, commit=parsed.commit,
            evidence=parsed.evidence, uploaded_by=actor, digest=digest,
            verdict=verdict.value, reason=reason.value, exit_code=rules.EXIT_CODES[verdict],
            record_count=len(judged_rows), reason_counts=dict(sorted(counts.items())),
            pin_manifest=pin.manifest if pin else "", pin_seed=pin.seed if pin else None,
            deselected_frozen=list(parsed.deselected_frozen),
            patch_class=parsed.patch_class or "", risky_lines=parsed.risky_lines,
        )
        batch.judge(judged)
        if not dry_run:
            batch.save()
            stored_at = connection.ops.adapt_datetimefield_value(now)
            _insert(NodeVerdict, VERDICT_COLUMNS, [
                (suite.pk, batch.pk, node_pk, position, stored_at, *decision.stored,
                 entry_id, state)
                for position, (node_pk, decision, entry_id, state) in enumerate(judged_rows)
            ])
            rollup_add(suite=suite, source=Source.VERDICTS, day=today, counts=counts)
        return IngestOutcome(batch, answers, dry_run=dry_run)

    return _ingest(VerdictBatch, suite, digest, dry_run, evaluate_and_store)

