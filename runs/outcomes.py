"""An upload's outcome, and the frame each upload is judged in: stored once, replayed
(judged again now, storing nothing), or a dry run (its writes rolled back); and a stored
upload's answer read back from its rows (the read API's GET of a report or batch)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import date

from django.db import transaction

from flakeboard import rules
from ledger.locks import lock_suite
from ledger.models import QuarantineEntry, Suite
from ledger.stored_once import stored_once

from .attempts import pooled_answer
from .diagnosed import rows_diagnosed
from .models import Measurement, Report, VerdictBatch


@dataclass
class IngestOutcome:
    upload: Report | VerdictBatch
    rows: list[dict]  # each row's answer, as the API shows it (runs.results)
    duplicate: bool = False
    dry_run: bool = False
    # The stored attempt whose body this is: a replay's, or a stored upload read back.
    repeats: int | None = None
    # A replay: judged with every other attempt at its gate, later ones included.
    replay: bool = False


def upload_digest(kind: str, body: bytes, meta: dict) -> str:
    digest = hashlib.sha256(kind.encode() + b"\0")
    digest.update(json.dumps(sorted((k, str(v)) for k, v in meta.items() if v)).encode())
    digest.update(b"\0" + body)
    return digest.hexdigest()


NO_ENTRY = (None, None, "", None)


def entries_at_upload(entries: dict[int, QuarantineEntry], today: date) -> dict[int, tuple]:
    """Each node's open entry as the rows need it, by node: (entry id, facts for the rules,
    state, answer summary). A node without one is not in it: ``NO_ENTRY``."""
    at_upload = {}
    for node_pk, entry in entries.items():
        state = entry.state(today).value
        at_upload[node_pk] = (entry.pk, entry.facts, state,
                              entry_answer(entry.pk, entry.owner, entry.expires, state))
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


def entry_answer(entry_id, owner, expires, state) -> dict | None:
    if entry_id is None:
        return None
    # tier and tier_rule are set for a tier violation by results.explain_violations.
    return {"id": entry_id, "owner": owner, "expires": expires.isoformat(),
            "state": state or None, "tier": None, "tier_rule": None}


ENTRY_VALUES = ("entry_id", "entry__owner", "entry__expires", "entry_state")


def cause_answer(cause) -> dict:
    """An order_dependent row's cause as it is stored and answered."""
    return {"role": cause.role.value, "nodes": list(cause.nodes), "complete": cause.complete}


def stored_report_rows(report: Report) -> list[dict]:
    """A stored report's rows as its answer gives them, each diagnosed from itself."""
    names = ("node_id", "node__nodeid", "status", "reason", "n", "fails", "upper95",
             "reported_upper95", "flags", "classification", "cause", "pooled", "experiments",
             *ENTRY_VALUES)
    rows, nodes, diagnosed = [], [], {}
    for (node, nodeid, status, reason, n, fails, upper95, reported, flags, kind, cause, pooled,
         experiments, *entry) in report.measurements.order_by("position").values_list(*names):
        rows.append({
            "nodeid": nodeid, "status": status, "reason": reason, "n": n, "fails": fails,
            "upper95": round(upper95, 4), "reported_upper95": reported, "flags": flags,
            "classification": kind or None, "cause": cause,
            "pooled": pooled_answer(**pooled) if pooled else pooled_answer(n, fails, []),
            "entry": entry_answer(*entry)})
        nodes.append(node)
        if rules.needs_diagnosis(kind or None, fails):
            diagnosed[node] = Measurement(classification=kind, cause=cause, fails=fails,
                                          experiments=experiments)
    return rows_diagnosed(report.suite, rows, diagnosed, nodes, report.day)


def stored_rows(model, upload) -> list[dict]:
    """The stored rows' answers, read as plain values."""
    if model is Report:
        return stored_report_rows(upload)
    names = ("node__nodeid", "verdict", "reason", "flags", "effective_lock",
             "effective_status", "property_check", "attempts", "sent", *ENTRY_VALUES)
    return [
        {"node": nodeid, "verdict": verdict, "reason": reason, "flags": flags,
         "fixture_lock": lock, "flake_status": status,
         "attempts": attempts or rules.add_attempt(
             None, upload.attempt, rules.PropertyCheck(check), rules.FixtureLock(lock)).answer(),
         "sent": sent, "entry": entry_answer(*entry)}
        for nodeid, verdict, reason, flags, lock, status, check, attempts, sent, *entry
        in upload.verdicts.order_by("position").values_list(*names)
    ]


def stored_outcome(upload: Report | VerdictBatch) -> IngestOutcome:
    """A stored upload's answer as it was given, read back from its rows (the read API's
    GET of a report or batch): a duplicate of the attempt it is. A replay of its body
    answers the same while no later attempt or ledger change judges it otherwise."""
    return IngestOutcome(upload, stored_rows(type(upload), upload), duplicate=True,
                         repeats=upload.attempt)


def rolled_back(suite: Suite, evaluate) -> IngestOutcome:
    """``evaluate(locked suite)`` under the suite's lock, its writes rolled back."""
    with transaction.atomic():
        outcome = evaluate(lock_suite(suite.pk))
        transaction.set_rollback(True)
    return outcome


def replayed(model, suite: Suite, digest: str, evaluate_and_store) -> IngestOutcome | None:
    """The answer to a body stored before: judged again now as a replay of it (which
    stores nothing); None when no upload has this digest."""
    # A replay reads no more of the stored upload than its id and attempt.
    upload = model.objects.filter(suite=suite, digest=digest).only("pk", "attempt").first()
    if upload is None:
        return None
    return rolled_back(suite, lambda locked: evaluate_and_store(locked, replay_of=upload))


def stored_or_dry_run(model, suite, digest, dry_run, evaluate_and_store) -> IngestOutcome:
    """Shared frame: the upload stored once (``ledger.stored_once``), or a dry run.
    ``evaluate_and_store`` takes the suite as its lock read it, which is the suite it is
    judged by.

    A dry run takes exactly the upload's path, its writes and its lock included, and then
    rolls them back: it answers what the upload would, because it is the upload. A replay
    takes the same path, as the attempt it repeats, and rolls it back too.
    """
    if dry_run:
        return rolled_back(suite, evaluate_and_store)
    return stored_once(suite, lambda: replayed(model, suite, digest, evaluate_and_store),
                       evaluate_and_store)


def replay_answer(upload: Report | VerdictBatch, replay_of, answers: list[dict],
                   ) -> IngestOutcome:
    """A replay's outcome: ``upload``, judged now and never saved, answers as the stored
    upload it repeats (its id, page and attempt)."""
    upload.pk, upload.attempt = replay_of.pk, replay_of.attempt
    return IngestOutcome(upload, answers, duplicate=True, repeats=replay_of.attempt,
                         replay=True)
