"""The board's arbiter, copied for the gate without --upload: the precedence table of SPEC 2.3
and the batch aggregate, over the signals the gate itself computed (effective already: the
lock against the suite's pin, the freeze from the ledger). A test holds it equal to
flakeboard.rules for every combination of inputs."""

from __future__ import annotations

import collections

from .pin import same_digest

VERDICT_EXIT_CODES = {"accept": 0, "reject": 1, "hold": 2}
LOCK_SEVERITY = {"match": 0, "drifted": 1, "missing": 2}


def effective_fixture_lock(claimed, manifest, seed, pin):
    """The worse of the claimed lock and what the suite's pin (its manifest and seed, or
    None when the suite has no pin) says of the record's manifest and seed; the manifests
    are compared as digests, so ``sha256:9F2C`` matches a pin of ``9f2c``."""
    if pin is None:
        return claimed
    if not manifest:
        found = "missing"
    elif not same_digest(manifest, pin["manifest"]) or (
            pin["seed"] is not None and seed != pin["seed"]):
        found = "drifted"
    else:
        found = "match"
    return max(claimed, found, key=LOCK_SEVERITY.__getitem__)


def arbitrate(property_check, fixture_lock, flake_status):
    """One record's verdict and reason: the first row of the table that matches."""
    if fixture_lock == "drifted":
        return "hold", "fixture_drifted"
    if fixture_lock == "missing":
        return "hold", "fixture_missing"
    if flake_status == "frozen":
        return "hold", "frozen_node"
    if property_check == "fail":
        return "reject", "property_fail"
    if property_check == "not_run":
        return "hold", "property_not_run"
    return "accept", "clean"


def aggregate(outcomes):
    """A batch's verdict and reason from its records' (verdict, reason) pairs: none is HOLD
    no_evidence; else any REJECT, then any HOLD, else ACCEPT, with the reason of the first
    record that decided it."""
    verdicts = [verdict for verdict, _ in outcomes]
    if not verdicts:
        return "hold", "no_evidence"
    verdict = next(v for v in ("reject", "hold", "accept") if v in verdicts)
    return verdict, next(reason for v, reason in outcomes if v == verdict)


def local_answer(records, entries):
    """The gate's records judged here, in the shape of the board's answer to a batch, so
    that the outputs print it as they print the board's."""
    rows, outcomes = [], []
    for record in records:
        verdict, reason = arbitrate(record["property_check"], record["fixture_lock"],
                                    record["flake_status"])
        outcomes.append((verdict, reason))
        entry = entries.get(record["node"]) if record["flake_status"] == "frozen" else None
        rows.append({"node": record["node"], "verdict": verdict, "reason": reason,
                     "flags": [], "fixture_lock": record["fixture_lock"],
                     "flake_status": record["flake_status"], "entry": entry, "url": None})
    verdict, reason = aggregate(outcomes)
    return {"id": None, "url": None, "duplicate": False, "dry_run": False, "local": True,
            "verdict": verdict, "reason": reason, "exit_code": VERDICT_EXIT_CODES[verdict],
            "reason_counts": dict(collections.Counter(r for _, r in outcomes)),
            "records": rows}
