"""Reads behind the ledger endpoint: its version tag, the policy-and-pin hash, and the full
view.

The compact ledger itself is ``selectors.ledger_for_gate``. Its tag is derived from the
suite's ``ledger_revision``, which every change to the served ledger bumps, so a client
whose copy is current is answered without building the ledger at all; the served bytes are
cached under a key built from the same inputs (``ledger_cache_key``).
"""

from __future__ import annotations

import hashlib
import json
from datetime import date, datetime
from functools import lru_cache

from flakeboard import rules

from .models import QuarantineEntry, Suite
from .selectors import tier_rule_specs, violation_facts


def _sha256(value) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def policy_document(suite: Suite) -> dict:
    """Everything besides the ledger and the day that a gate decision depends on."""
    pin = suite.fixture_pin
    return {
        "policy": {
            "max_upper_rate": suite.max_upper_rate,
            "min_runs": suite.min_runs,
            "max_quarantined_share": suite.max_quarantined_share,
            "max_quarantine_days": suite.max_quarantine_days,
        },
        "fixture_pin": None if pin is None else {"manifest": pin.manifest, "seed": pin.seed},
    }


def policy_and_pin_hash(suite: Suite) -> str:
    """The hash of ``policy_document``: the policy's numbers and the fixture pin. Not
    ``rules.policy_hash``, the numbers' alone, which every upload's answer stores (its
    ``judged_against``) and the full view gives beside this one to compare it with."""
    return "sha256:" + _sha256(policy_document(suite))


def ledger_etag(suite: Suite, *, full: bool, today: date) -> str:
    """A strong entity tag for the served ledger.

    The compact ledger changes only with the revision; the full view also shows entry
    states and ages (which move with the day), the policy and the suite's slug and name
    (which the admin may rename without a revision).
    """
    identity = (suite.pk, suite.created_at, suite.ledger_revision)
    if full:
        return _tag(*identity, today, policy_and_pin_hash(suite), suite.slug, suite.title)
    return _tag(*identity)


@lru_cache(maxsize=1024)  # the same few tags, asked for on every ledger GET
def _tag(pk: int, created_at: datetime, revision: int, *full) -> str:
    parts = [pk, created_at.isoformat(), revision]
    if full:
        today, policy, slug, title = full
        parts += ["full", today.isoformat(), policy, slug, title]
    return '"' + _sha256(parts)[:40] + '"'


def ledger_cache_key(suite: Suite, *, full: bool, today: date) -> str:
    """Where the served bytes of one view of the ledger are cached: one key per suite,
    ledger revision, policy-and-pin hash and day (states and ages move at midnight), so a
    change to any of them is a new key and a cached ledger is never served stale."""
    view = "full" if full else "compact"
    identity = _sha256([suite.created_at.isoformat(), policy_and_pin_hash(suite), suite.slug,
                        suite.title])[:32]
    return (f"flakeboard:ledger:{suite.pk}:{suite.ledger_revision}:{view}:"
            f"{today.isoformat()}:{identity}")


def _entry_facts(entry: QuarantineEntry, today: date) -> dict:
    return {
        "id": entry.pk,
        "node": entry.node.nodeid,
        **entry.gate_dict(),
        "state": entry.state(today).value,
        "renewals": entry.renewals,
        "age_days": entry.age_days(today),
        "created": entry.created_at.date().isoformat(),
        "upper95_mismatch": entry.upper95_mismatch,
        "ready_to_clear": entry.ready_to_clear,
        "ready_since": entry.ready_since.isoformat() if entry.ready_since else None,
        "ticket": entry.ticket or None,
        "ticket_closed_in_tracker": entry.ticket_closed_at is not None,
    }


def ledger_full(suite: Suite, *, today: date, now: datetime) -> dict:
    """The served ledger with what a person or an audit needs beside it."""
    entries = (
        QuarantineEntry.objects.filter(suite=suite)
        .open()
        .select_related("node")
        .order_by("node__nodeid")
    )
    specs = tier_rule_specs(suite)
    served, violations = [], []
    for entry in entries:
        facts = _entry_facts(entry, today)
        if entry.tier_violation:
            facts.update(violation_facts(entry.node.nodeid, entry.node.tier, specs))
            violations.append(facts)
        else:
            served.append(facts)
    counts = {state.value: 0 for state in rules.EntryState if state != rules.EntryState.CLEARED}
    for facts in (*served, *violations):
        counts[facts["state"]] += 1
    return {
        "suite": {"slug": suite.slug, "name": suite.title},
        "generated_at": now.isoformat(),
        "today": today.isoformat(),
        "ledger_revision": suite.ledger_revision,
        **policy_document(suite),
        "policy_hash": rules.policy_hash(suite.policy),
        "policy_and_pin_hash": policy_and_pin_hash(suite),
        "clear_after_clean_measurements": suite.clear_after_clean_measurements,
        "counts": counts,
        "entries": served,
        "violations": violations,
    }
