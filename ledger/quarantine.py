"""Quarantine services: create, renew, clear and import. Every quarantine rule of SPEC 4
is enforced here, once; the form, the API, the admin and the import command call these."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import transaction
from django.utils import timezone

from flakeboard import rules

from . import messages
from .audit import bump_ledger_revision, entry_snapshot, record_event
from .locks import lock_suite
from .models import AuditEvent, Node, QuarantineEntry, Suite
from .selectors import share_figures, tier_resolution


class _Errors:
    """Collects refusals per field, then raises them together as one ValidationError."""

    def __init__(self):
        self.by_field: dict[str, list[ValidationError]] = {}

    def add(self, name: str, message: str, code: str) -> None:
        self.by_field.setdefault(name, []).append(ValidationError(message, code=code))

    def raise_if_any(self) -> None:
        if self.by_field:
            raise ValidationError(self.by_field)


def _check_tier(errors: _Errors, suite: Suite, nodeid: str) -> None:
    resolution = tier_resolution(suite, nodeid)
    if rules.quarantinable(resolution.tier):
        return
    errors.add(
        "node",
        f"{nodeid} cannot be quarantined: the tier rule “{resolution.rule.glob}” makes it "
        f"tier {resolution.tier}, and only tier-2 (repeat-budget) nodes may be quarantined.",
        "tier_refused",
    )


# Refusals on facts the ledger does not hold: an app that stores a node's runs registers a
# check here when it starts (runs: a node whose latest measurement failed every run is
# broken, not flaky). Each takes the suite and the node, and answers why the node may not
# be quarantined, or "".
REFUSALS: list[Callable[[Suite, Node], str]] = []


def _check_refusals(errors: _Errors, suite: Suite, node: Node | None) -> None:
    for refusal in REFUSALS if node is not None else ():
        if why := refusal(suite, node):
            errors.add("node", why, "not_flaky")


def _check_fields(errors: _Errors, *, owner, evidence, expires, today, max_days, allow_past):
    if problem := rules.owner_problem(owner):
        errors.add("owner", messages.owner_message(problem), "owner_invalid")
    if problem := rules.evidence_problem(evidence):
        errors.add("evidence", messages.evidence_message(problem), "evidence_required")
    if not isinstance(expires, date):
        errors.add("expires", "An expiry date is required.", "expiry_required")
    elif not (allow_past and expires <= today) and (
        problem := rules.expiry_problem(expires, today, max_days)
    ):
        errors.add(
            "expires", messages.expiry_message(problem, today, max_days), "expiry_out_of_bounds"
        )


CAP_EXCEEDED = "cap_exceeded"  # the code of a refusal over the share cap, one or many


def over_cap_message(after: rules.ShareFigures, doing: str) -> str | None:
    """Why ``doing`` is refused when it would leave the share at ``after``, over the cap;
    None when ``after`` is within it. The one cap check of every path that adds to the
    share: a new entry, and a renewal that brings an expired entry back, one or many."""
    if not after.over_cap:
        return None
    return (f"{doing} would put {after.quarantined} of {after.size_words} in quarantine "
            f"({after.share:.1%}), over the suite's cap of {after.cap:.1%}.")


def _check_cap(errors: _Errors, after: rules.ShareFigures, doing: str) -> None:
    if message := over_cap_message(after, doing):
        errors.add(NON_FIELD_ERRORS, message, CAP_EXCEEDED)


def _recorded(entry: QuarantineEntry, *, action, actor: str, note: str, at: datetime,
              before: dict | None = None) -> QuarantineEntry:
    """The audit event of a change to what the served ledger holds, and the revision bump
    that tells the gate: both in the change's own transaction."""
    record_event(suite=entry.suite, entry=entry, action=action, actor=actor, before=before,
                 after=entry_snapshot(entry), note=note, at=at)
    bump_ledger_revision(entry.suite)
    return entry


def quarantine_create(
    *,
    suite: Suite,
    nodeid: str,
    owner: str,
    expires: date,
    evidence: str,
    actor: str,
    today: date,
    note: str = "",
    n: int = 0,
    fails: int = 0,
    reported_upper95: float | None = None,
    seed_base: int | None = None,
    imported: bool = False,
    now: datetime | None = None,
) -> QuarantineEntry:
    """Open a quarantine entry for a tier-2 node, or raise ValidationError naming each refusal.

    ``imported`` is the migration path of ``import_ledger``: an already-expired entry is
    kept (so the migrated ledger still fails its gate) and the share cap is not applied.
    """
    errors = _Errors()
    if problem := rules.nodeid_problem(nodeid):
        errors.add("node", messages.nodeid_message(problem, nodeid), "nodeid_invalid")
        errors.raise_if_any()
    _check_fields(errors, owner=owner, evidence=evidence, expires=expires, today=today,
                  max_days=suite.max_quarantine_days, allow_past=imported)
    if not 0 <= fails <= n:
        errors.add("fails", "fails must be between 0 and n.", "counts_invalid")
    with transaction.atomic():
        # One writer per suite at a time: the share cap and the one-open-entry rule hold.
        suite = lock_suite(suite.pk)
        node = Node.objects.filter(suite=suite).named(nodeid).first()
        _check_tier(errors, suite, nodeid)
        _check_refusals(errors, suite, node)
        held = node is not None and QuarantineEntry.objects.open().filter(node=node).exists()
        if held:
            errors.add("node", f"{nodeid} already has an open quarantine entry.", "already_open")
        if not imported:
            # The node joins the test set by holding the new entry, if it is not known yet:
            # the rule read from the node in hand, as known_nodes filters by it.
            known = node is not None and rules.node_is_known(node.last_seen, today,
                                                             has_open_entry=held)
            after = share_figures(suite, today, joining=0 if known else 1).with_one_more()
            _check_cap(errors, after, "Quarantining this node")
        errors.raise_if_any()
        now = now or timezone.now()
        if node is None:
            # Not seen in any upload: it is in the test set only while it holds an entry.
            node = Node.objects.create(suite=suite, nodeid=nodeid, tier=rules.Tier.REPEAT_BUDGET)
        entry = QuarantineEntry.objects.create(
            suite=suite, node=node, owner=owner, expires=expires, evidence=evidence, note=note,
            seed_base=seed_base, n=n, fails=fails, upper95=rules.upper95(fails, n),
            reported_upper95=reported_upper95,
            upper95_mismatch=rules.upper95_mismatch(reported_upper95, fails, n),
            created_at=now, created_by=actor, updated_at=now,
        )
        action = AuditEvent.Action.IMPORT if imported else AuditEvent.Action.CREATE
        return _recorded(entry, action=action, actor=actor, note=note, at=now)


def _locked_open_entry(entry: QuarantineEntry, errors: _Errors) -> QuarantineEntry:
    lock_suite(entry.suite_id)
    locked = QuarantineEntry.objects.select_related("node", "suite").get(pk=entry.pk)
    if locked.cleared_at is not None:
        errors.add(NON_FIELD_ERRORS, "This entry has already been cleared.", "already_cleared")
        errors.raise_if_any()
    return locked


def quarantine_renew(
    *,
    entry: QuarantineEntry,
    expires: date,
    evidence: str,
    actor: str,
    today: date,
    owner: str | None = None,
    note: str = "",
    now: datetime | None = None,
) -> QuarantineEntry:
    """Push an open entry's expiry out, on new evidence; counted as a renewal. An expired
    entry comes back into the share, so it is refused over the cap as a new entry is; a
    live one is in the share already, and its renewal changes no share."""
    errors = _Errors()
    with transaction.atomic():
        entry = _locked_open_entry(entry, errors)
        new_owner = owner or entry.owner
        _check_fields(errors, owner=new_owner, evidence=evidence, expires=expires, today=today,
                      max_days=entry.suite.max_quarantine_days, allow_past=False)
        if evidence == entry.evidence:
            errors.add(
                "evidence",
                "A renewal needs new evidence: this is the entry's current evidence.",
                "evidence_unchanged",
            )
        _check_tier(errors, entry.suite, entry.node.nodeid)
        if rules.renewal_revives(entry.facts, today):
            after = share_figures(entry.suite, today).with_one_more()
            _check_cap(errors, after, "Renewing this expired entry")
        errors.raise_if_any()
        before = entry_snapshot(entry)
        entry.expires = expires
        entry.evidence = evidence
        entry.owner = new_owner
        entry.renewals += 1
        entry.updated_at = now or timezone.now()
        entry.save(update_fields=["expires", "evidence", "owner", "renewals", "updated_at"])
        return _recorded(entry, action=AuditEvent.Action.RENEW, actor=actor, note=note,
                         at=entry.updated_at, before=before)


def quarantine_clear(
    *, entry: QuarantineEntry, note: str, actor: str, now: datetime | None = None,
    if_ready: bool = False,
) -> QuarantineEntry:
    """Close an entry: it leaves the served ledger and stays in history. ``if_ready``
    (the one-click clearance) refuses an entry that is not ready to clear any more."""
    errors = _Errors()
    if not note or not note.strip():
        errors.add("note", "Say why the entry is cleared (fixed, deleted, …).", "note_required")
    with transaction.atomic():
        entry = _locked_open_entry(entry, errors)
        if if_ready and not entry.ready_to_clear:
            errors.add(NON_FIELD_ERRORS, "This entry is not ready to clear: its node's latest "
                       "measurements are not all within budget.", "not_ready")
        errors.raise_if_any()
        before = entry_snapshot(entry)
        entry.cleared_at = entry.updated_at = now or timezone.now()
        entry.cleared_note = note.strip()
        entry.save(update_fields=["cleared_at", "cleared_note", "updated_at"])
        return _recorded(entry, action=AuditEvent.Action.CLEAR, actor=actor,
                         note=entry.cleared_note, at=entry.cleared_at, before=before)
