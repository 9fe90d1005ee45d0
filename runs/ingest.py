"""Ingest services: validate an upload whole, evaluate it against the ledger, and store it
with its rollups in one transaction. ``dry_run`` evaluates the same way and stores nothing.

The same body (with the same metadata) uploaded twice is stored once. The second upload,
a replay, is judged again as the gate stands now, over every attempt at its patch and
commit (a report: its measurements pooled over every report at its commit), and stores
nothing: it is marked a duplicate and names the attempt it repeats. Never the stored
verdict: a byte-identical rerun after a REJECT would otherwise answer an earlier ACCEPT
(SPEC 2.4a).
"""

from __future__ import annotations

import json
from datetime import date, datetime
from functools import cache
from typing import NamedTuple

from django.conf import settings
from django.db import connection
from django.utils import timezone

from flakeboard import rules
from ledger.clearance import ci_failures_seen, measurements_seen
from ledger.models import Suite
from ledger.refusals import UploadInvalid
from ledger.selectors import open_entries_by_node, share_figures
from ledger.trust import vouched
from web.bulk import cycle_collector_paused, insert_chunked
from web.metrics import observed

from .attempts import (
    earlier_measurements,
    latest_attempt,
    next_attempt,
    pooled_answer,
    prior_records,
)
from .diagnosed import rows_diagnosed
from .models import Measurement, NodeVerdict, Report, VerdictBatch
from .outcomes import (
    NO_ENTRY,
    IngestOutcome,
    JsonText,
    cause_answer,
    entries_at_upload,
    replay_answer,
    stored_or_dry_run,
    upload_digest,
)
from .rollups import Source, rollup_add, upload_counts
from .upload_nodes import named_nodes_create, nodes_for_upload
from .wire import parse_report, parse_signals


class Decision(NamedTuple):
    """The arbiter's outcome for one combination of signals and entry, the values a verdict
    row stores for it (from the record's signals to its flags), and the record's answer
    without its node and entry."""

    outcome: rules.ArbiterOutcome
    stored: tuple
    answer: dict


MEASUREMENT_COLUMNS = (
    "suite_id", "report_id", "node_id", "position", "created_at", "n", "fails", "upper95",
    "reported_upper95", "seed_base", "stated_tier", "classification", "status", "reason",
    "flags", "entry_id", "entry_state", "pooled", "cause", "experiments",
)
VERDICT_COLUMNS = (
    "suite_id", "batch_id", "node_id", "position", "created_at", "property_check",
    "fixture_lock", "flake_status", "fixture_manifest", "seed", "freeze_expires",
    "stated_tier", "effective_lock", "effective_status", "verdict", "reason", "flags",
    "attempts", "flipped", "entry_id", "entry_state", "sent", "failure_signature",
)


def _received(kind: str, parse, *, names: tuple[str, ...], facts: tuple[str, ...],
              suite: Suite, body: bytes, query: dict | None, credential: rules.Credential,
              signed: rules.SignedFacts | None):
    """The upload parsed whole (a bare list takes the metadata ``names`` from the query),
    its ``facts`` as its credential vouches for them (``ledger.trust.vouched``: refused
    where it does not), and its digest: the same body with the same metadata is stored
    once. A verified CI token's run and attempt are metadata too, so a re-run of the job
    is a new attempt even when its body is the same (``rules.SignedFacts.origin``)."""
    query = {k: v for k, v in (query or {}).items() if k in names}
    parsed = parse(body, query, settings.UPLOAD_MAX_RECORDS)
    vouched_facts, found = vouched(suite, credential, signed,
                                   {name: getattr(parsed, name) for name in facts})
    if found:
        raise UploadInvalid("validation_failed", found)
    # One commit in any spelling is one upload's metadata (``rules.commits``).
    meta = {k: rules.canonical_commit(v) if k == "commit" and isinstance(v, str) else v
            for k, v in query.items()}
    if signed is not None:
        meta["signed_run"] = signed.origin
    return (parsed.model_copy(update={name: vouched_facts[name] for name in facts}),
            upload_digest(kind, body, meta))


def _upload_ingest(kind: str):
    """An upload's ingest service: counted and timed as a ``kind`` upload (refused when it
    raises UploadInvalid), and run with the cycle collector paused."""

    def decorate(ingest):
        return cycle_collector_paused()(observed(kind, (UploadInvalid,))(ingest))

    return decorate


def _judging(locked: Suite, stated: dict[str, int | None], today: date, commit: str, also=()):
    """What every row is judged with: the upload's nodes, stored and seen today; the suite
    as it is now in force (its ledger revision, policy and pin), which is the suite as its
    lock read it: storing the nodes writes nothing of the suite's row; and each node's
    open entry, and those of the nodes ``also`` (earlier attempts' nodes that this upload
    does not name), as the rows need it and as read (to add to their trails)."""
    nodes = nodes_for_upload(locked, stated, today, commit)
    held = open_entries_by_node(locked, sorted({n.pk for n in nodes.values()} | set(also)))
    return nodes, locked, entries_at_upload(held, today), held.values()


@_upload_ingest("report")
def report_ingest(*, suite: Suite, body: bytes, actor: str, query: dict | None = None,
                  dry_run: bool = False, now: datetime | None = None,
                  credential: rules.Credential = rules.Credential.STATED,
                  signed: rules.SignedFacts | None = None) -> IngestOutcome:
    """Ingest a flake-report.json (a bare list, or the envelope form). ``credential`` is
    what vouches for its branch, and ``signed`` a verified CI token's facts, which win
    over the report's (``ledger.trust.vouched``)."""
    parsed, digest = _received(
        "report", parse_report, names=("commit", "branch", "evidence"),
        facts=("branch", "commit"), suite=suite, body=body, query=query,
        credential=credential, signed=signed)
    now = now or timezone.now()
    today = now.date()

    def evaluate_and_store(locked: Suite, replay_of: Report | None = None) -> IngestOutcome:
        """The report judged and stored, under the suite's lock (``locked``, the suite as
        the lock read it); or, ``replay_of`` a stored report of this body, judged again now
        and not stored."""
        nodes, judged, entries, held = _judging(
            locked, {row.nodeid: row.tier for row in parsed.measurements}, today, parsed.commit)
        named_nodes_create(suite, {nodeid for row in parsed.measurements if row.cause
                                   for nodeid in row.cause.nodes} - nodes.keys())
        # Judged against the test set with this upload's nodes in it, counted once.
        share = share_figures(judged, today)
        policy = judged.policy
        gate = cache(lambda n, fails, facts, new: rules.gate_measurement(
            n=n, fails=fails, entry=facts, policy=policy, today=today, new=new))
        bound = cache(rules.upper95)
        pool = cache(lambda measured: rules.pool_measurements(measured))
        mismatch = cache(rules.upper95_mismatch)
        flags_text = JsonText()
        stored_at = connection.ops.adapt_datetimefield_value(now)
        # The node's earlier measurements at this commit pool with this one (SPEC 2.4a).
        attempt, earlier = earlier_measurements(suite.pk, parsed.commit,
                                                [node.pk for node in nodes.values()])
        rows, answers, outcomes, measured = [], [], [], {}
        diagnosed, row_nodes = {}, []  # the rows a diagnosis answers, by node; each row's
        for position, row in enumerate(parsed.measurements):
            node_pk = nodes[row.nodeid].pk
            entry_id, facts, state, entry_answer = entries.get(node_pk, NO_ENTRY)
            if entry_id is not None:
                measured[entry_id] = (row.n, row.fails, row.classification)
            pooled, stored_pool = rules.PooledCounts(row.n, row.fails), None
            before = earlier.get(node_pk, [])
            if replay_of is not None:
                # Its own stored measurement is this row: pooled with every other, now.
                before = [(report, counts) for report, counts in before
                          if report != replay_of.pk]
            if before:
                pooled = pool((rules.SeededCounts(row.n, row.fails, row.seed_base),
                               *(counts for _, counts in before)))
                stored_pool = {"n": pooled.n, "fails": pooled.fails,
                               "reports": sorted({report for report, _ in before})}
            node = nodes[row.nodeid]
            new = row.new_test and rules.is_new(node.first_commit, parsed.commit)
            outcome = gate(pooled.n, pooled.fails, facts, new)
            outcomes.append(outcome)
            flags = [rules.Flag.UPPER95_MISMATCH.value] if mismatch(
                row.upper95, row.fails, row.n) else []
            # A stated tier is the client's word: flagged where the rules differ, and the
            # row judged by the rules' tier (its entry's state says which).
            if rules.tier_disagrees(row.tier, node.tier):
                flags.append(rules.Flag.TIER_DISAGREES.value)
            upper95 = bound(row.fails, row.n)
            status, reason = outcome.status.value, outcome.reason.value
            kind = None if row.classification is None else row.classification.value
            cause = None if row.cause is None else cause_answer(row.cause)
            experiments = None if row.experiments is None else row.experiments.stored()
            rows.append((
                suite.pk, None, node_pk, position, stored_at, row.n, row.fails, upper95,
                row.upper95, row.seed_base, row.tier, kind or "", status, reason,
                flags_text(flags),
                entry_id, state, None if stored_pool is None else json.dumps(stored_pool),
                None if cause is None else json.dumps(cause),
                None if experiments is None else json.dumps(experiments),
            ))
            row_nodes.append(node_pk)
            if rules.needs_diagnosis(kind, row.fails):
                diagnosed[node_pk] = Measurement(
                    classification=kind or "", cause=cause, fails=row.fails,
                    experiments=experiments)
            answers.append({
                "nodeid": row.nodeid, "status": status, "reason": reason, "n": row.n,
                "fails": row.fails, "upper95": round(upper95, 4),
                "reported_upper95": row.upper95, "flags": flags, "classification": kind,
                "cause": cause, "pooled": pooled_answer(pooled.n, pooled.fails,
                                        stored_pool["reports"] if stored_pool else []),
                "entry": entry_answer,
            })
        rows_diagnosed(suite, answers, diagnosed, row_nodes, today)
        result = rules.gate_report(outcomes, share=share)
        report = Report(
            suite=suite, created_at=now, day=today, commit=parsed.commit, branch=parsed.branch,
            evidence=parsed.evidence, selected_total=parsed.selected_total, uploaded_by=actor,
            digest=digest, status=result.status.value, reason=result.reason.value,
            exit_code=result.exit_code, quarantined=share.quarantined,
            test_set_size=share.size, share=result.share, max_share=share.cap,
            size_source=share.source.value, size_commit=share.run.commit if share.run else "",
            over_cap=result.over_cap,
            measurement_count=len(rows),
            attempt=attempt,
            fail_count=sum(o.status is rules.GateStatus.FAIL for o in outcomes),
            warn_count=sum(o.status is rules.GateStatus.WARN for o in outcomes),
        )
        report.judge(judged)
        if replay_of is not None:
            return replay_answer(report, replay_of, answers)
        if not dry_run:
            report.save()
            insert_chunked(Measurement, MEASUREMENT_COLUMNS,
                    [(r[0], report.pk, *r[2:]) for r in rows])
            # Release when fixed: each entry's trail and ready flag, in this transaction.
            measurements_seen(suite=judged, report=report.pk, measured=measured, now=now,
                              held=held)
            rollup_add(
                suite=suite, source=Source.REPORTS, day=today,
                counts=upload_counts((o.reason for o in outcomes), result.reason),
            )
        return IngestOutcome(report, answers, dry_run=dry_run)

    return stored_or_dry_run(Report, suite, digest, dry_run, evaluate_and_store)


@_upload_ingest("signals")
def signals_ingest(*, suite: Suite, body: bytes, actor: str, query: dict | None = None,
                   dry_run: bool = False, now: datetime | None = None,
                   credential: rules.Credential = rules.Credential.STATED,
                   signed: rules.SignedFacts | None = None) -> IngestOutcome:
    """Ingest signal records (a bare list, or the envelope form) and arbitrate each. A
    batch states no branch; with a verified CI token (``signed``) its commit is the
    signed one, as a report's is (``ledger.trust.vouched``), and a re-run of the job is
    the gate's next attempt, never a replay."""
    parsed, digest = _received(
        "signals", parse_signals, names=("patch", "commit", "evidence"), facts=("commit",),
        suite=suite, body=body, query=query, credential=credential, signed=signed)
    now = now or timezone.now()
    today = now.date()

    def evaluate_and_store(locked: Suite,
                           replay_of: VerdictBatch | None = None) -> IngestOutcome:
        """The batch judged and stored, under the suite's lock (``locked``, the suite as
        the lock read it); or, ``replay_of`` a stored batch of this body, judged again now
        and not stored."""
        # An attempt of the gate at its patch and commit: judged over every attempt so far
        # (SPEC 2.4a), the latest stored one holding each earlier node's merged evidence.
        latest = latest_attempt(VerdictBatch, suite.pk, parsed.commit, parsed.patch)
        if replay_of is not None:
            # A replay adds no attempt: every one stored, the replayed one among them
            # (without a commit, a batch is a gate of its own).
            latest = latest or replay_of
        attempt = next_attempt(latest)
        prior = prior_records(latest)
        nodes, judged, entries, held = _judging(
            locked, {record.node: record.tier for record in parsed.records}, today, parsed.commit,
            also=prior)
        pin = judged.fixture_pin
        # A broken runner's attempt (SPEC 2.4a): its failures count for the verdict, and no
        # node flips on them.
        checks = [record.property_check for record in parsed.records]
        failing = rules.failing_records(checks)
        signatures = [record.failure_signature for record in parsed.records
                      if record.property_check is rules.PropertyCheck.FAIL]
        why = rules.attempt_infrastructure(checks, share=judged.junit_infrastructure_share,
                                           signatures=signatures)
        infrastructure = why is not None
        # The arbiter's answer depends on the record's signals, the node's earlier attempts
        # and its entry, never on the node's name: decided once per distinct combination,
        # with the values it stores and answers.
        flags_text = JsonText()
        attempts_text = cache(lambda merged: json.dumps(merged.answer()))
        day_text = cache(connection.ops.adapt_datefield_value)

        def decision(signals: tuple, outcome: rules.ArbiterOutcome,
                     merged: rules.NodeAttempts) -> Decision:
            check, lock, status, manifest, seed, freeze, tier = signals
            flags = [f.value for f in outcome.flags]
            answer = {"verdict": outcome.verdict.value, "reason": outcome.reason.value,
                      "flags": flags, "fixture_lock": outcome.fixture_lock.value,
                      "flake_status": outcome.flake_status.value,
                      "attempts": merged.answer()}
            stored = (check.value, lock.value, status.value, manifest, seed, day_text(freeze),
                      tier, answer["fixture_lock"], answer["flake_status"], answer["verdict"],
                      answer["reason"], flags_text(flags), attempts_text(merged),
                      merged.flipped)
            return Decision(outcome, stored, answer)

        @cache
        def decide(signals: tuple, facts: rules.EntryFacts | None,
                   before: rules.NodeAttempts | None, tier: int) -> Decision:
            """A record of this attempt, added to the node's earlier ones; ``tier`` is the
            node's by the tier rules, which a stated one is only compared with."""
            record = rules.SignalRecord("", *signals)
            own = rules.evaluate_record(record, ledger_entry=facts, pin=pin, today=today)
            merged = rules.add_attempt(before, attempt, record.property_check,
                                       own.fixture_lock, infrastructure=infrastructure)
            return decision(signals, rules.judge_attempts(
                record, merged, ledger_entry=facts, today=today, tier=tier), merged)

        @cache
        def carry(signals: tuple, facts: rules.EntryFacts | None,
                  merged: rules.NodeAttempts, tier: int | None = None) -> Decision:
            """A node of earlier attempts judged again now, as they leave it: one this
            attempt does not name, or a replay's own (then ``tier``, the node's by the
            rules, is compared with the tier its record stated)."""
            return decision(signals, rules.judge_attempts(
                rules.SignalRecord("", *signals), merged, ledger_entry=facts, today=today,
                tier=tier), merged)

        # judged_rows: (node pk, decision, entry id, state, sent, failure signature)
        judged_rows, answers = [], []
        failed = []  # the nodes whose property check failed in this attempt
        for record in parsed.records:
            node_pk, tier = nodes[record.node].pk, nodes[record.node].tier
            if record.property_check is rules.PropertyCheck.FAIL:
                failed.append(node_pk)
            entry_id, facts, state, entry_answer = entries.get(node_pk, NO_ENTRY)
            before = prior.pop(node_pk, None)
            if replay_of is not None and before is not None:
                # Its record is among the attempts already: the node as they leave it.
                decided = carry(before.signals, facts, before.merged, tier)
            else:
                decided = decide((
                    record.property_check, record.fixture_lock, record.flake_status,
                    record.fixture_manifest, record.seed, record.freeze_expires, record.tier,
                ), facts, before and before.merged, tier)
            judged_rows.append((node_pk, decided, entry_id, state, True,
                                record.failure_signature))
            answers.append({"node": record.node, **decided.answer, "sent": True,
                            "entry": entry_answer})
        for node_pk, (nodeid, signals, merged) in prior.items():
            entry_id, facts, state, entry_answer = entries.get(node_pk, NO_ENTRY)
            decided = carry(signals, facts, merged)
            judged_rows.append((node_pk, decided, entry_id, state, False, ""))
            answers.append({"node": nodeid, **decided.answer, "sent": False,
                            "entry": entry_answer})
        outcomes = [row[1].outcome for row in judged_rows]
        verdict, reason = rules.aggregate_reason(outcomes)
        counts = upload_counts((o.reason for o in outcomes), reason)
        batch = VerdictBatch(
            suite=suite, created_at=now, day=today, patch=parsed.patch, commit=parsed.commit,
            evidence=parsed.evidence, uploaded_by=actor, digest=digest,
            verdict=verdict.value, reason=reason.value, exit_code=rules.EXIT_CODES[verdict],
            record_count=len(parsed.records), reason_counts=dict(sorted(counts.items())),
            pin_manifest=pin.manifest if pin else "", pin_seed=pin.seed if pin else None,
            deselected_frozen=list(parsed.deselected_frozen),
            patch_class=parsed.patch_class or "", risky_lines=parsed.risky_lines,
            attempt=attempt, failing_share=float(failing.share), infrastructure=infrastructure,
            infrastructure_signature=signatures[0]
            if why is rules.InfrastructureReason.ONE_SIGNATURE else "",
        )
        batch.judge(judged)
        if replay_of is not None:
            return replay_answer(batch, replay_of, answers)
        if not dry_run:
            batch.save()
            stored_at = connection.ops.adapt_datetimefield_value(now)
            insert_chunked(NodeVerdict, VERDICT_COLUMNS, [
                (suite.pk, batch.pk, node_pk, position, stored_at, *decided.stored,
                 entry_id, state, sent, failure_signature)
                for position, (node_pk, decided, entry_id, state, sent, failure_signature)
                in enumerate(judged_rows)
            ])
            rollup_add(suite=suite, source=Source.VERDICTS, day=today, counts=counts)
            # Release when fixed: a node CI saw fail is not ready to clear.
            ci_failures_seen(suite=judged, nodes=failed, source="gate", commit=parsed.commit,
                             now=now, held=held)
        return IngestOutcome(batch, answers, dry_run=dry_run)

    return stored_or_dry_run(VerdictBatch, suite, digest, dry_run, evaluate_and_store)

