"""Quarantine services: create, renew, clear and import. Every quarantine rule of SPEC 4
is enforced here, once; the form, the API, the admin and the import command call these."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from flakeboard import rules

from .models import AuditEvent, Node, QuarantineEntry, Suite
from .selectors import share_figures, tier_resolution


def _entry_snapshot(entry: QuarantineEntry) -> dict:
    return {
        "owner": entry.owner,
        "expires": entry.expires.isoformat(),
        "evidence": entry.evidence,
        "renewals": entry.renewals,
        "cleared": entry.cleared_at is not None,
    }


def bump_ledger_revision(suite: Suite) -> None:
    Suite.objects.filter(pk=suite.pk).update(ledger_revision=F("ledger_revision") + 1)


def record_event(*, suite, action, actor, entry=None, before=None, after=None, note="", at=None):
    return AuditEvent.objects.create(
        suite=suite,
        entry=entry,
        action=action,
        actor=actor,
        at=at or timezone.now(),
        before=before or {},
        after=after or {},
        note=note,
    )


class _Errors:
    """Collects refusals per field, then raises them together as one ValidationError."""

    def __init__(self):
        self.by_field: dict[str, list[ValidationError]] = {}

    def add(self, name: str, message: str, code: str) -> None:
        self.by_field.setdefault(name, []).append(ValidationError(message, code=code))

    def raise_if_any(self) -> None:
        if self.by_field:
            raise ValidationError(self.by_field)


def _check_tier(errors: _Errors, suite: Suite, nodeid: str, node: Node | None) -> None:
    resolution = tier_resolution(suite, nodeid, node)
    if resolution.tier >= rules.Tier.REPEAT_BUDGET:
        return
    if resolution.rule is not None:
        why = f"the tier rule “{resolution.rule.glob}” makes it tier {resolution.tier}"
    else:
        why = f"an upload stated it is tier {resolution.tier}"
    errors.add(
        "node",
        f"{nodeid} cannot be quarantined: {why}, and only tier-2 (repeat-budget) "
        "nodes may be quarantined.",
        "tier_refused",
    )


def _is_unicode(text: str) -> bool:
    """False for a string holding a lone surrogate (a JSON file can): not storable."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_fields(errors: _Errors, *, owner, evidence, expires, today, max_days, allow_past):
    if message := rules.owner_error(owner):
        errors.add("owner", message, "owner_invalid")
    elif not _is_unicode(owner):
        errors.add("owner", "The owner must be valid Unicode text.", "owner_invalid")
    if message := rules.evidence_error(evidence):
        errors.add("evidence", message, "evidence_required")
    elif not _is_unicode(evidence):
        errors.add("evidence", "The evidence must be valid Unicode text.", "evidence_required")
    if not isinstance(expires, date):
        errors.add("expires", "An expiry date is required.", "expiry_required")
    elif not (allow_past and expires < today) and (
        message := rules.expiry_error(expires, today, max_days)
    ):
        errors.add("expires", message, "expiry_out_of_bounds")


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
    if message := rules.nodeid_error(nodeid) or (
        None if _is_unicode(nodeid) else "must be valid Unicode text"
    ):
        errors.add("node", f"The node id {message}.", "nodeid_invalid")
        errors.raise_if_any()
    _check_fields(
        errors,
        owner=owner,
        evidence=evidence,
        expires=expires,
        today=today,
        max_days=suite.max_quarantine_days,
        allow_past=imported,
    )
    if not 0 <= fails <= n:
        errors.add("fails", "fails must be between 0 and n.", "counts_invalid")
    with transaction.atomic():
        # One writer per suite at a time: the share cap and the one-open-entry rule hold.
        suite = Suite.objects.select_for_update().get(pk=suite.pk)
        node = Node.objects.filter(suite=suite, nodeid=nodeid).first()
        _check_tier(errors, suite, nodeid, node)
        if node is not None and QuarantineEntry.objects.open().filter(node=node).exists():
            errors.add("node", f"{nodeid} already has an open quarantine entry.", "already_open")
        if not imported:
            figures = share_figures(suite, today, extra_node=nodeid)
            if rules.share_over_cap(figures.quarantined + 1, figures.size, suite.policy):
                errors.add(
                    NON_FIELD_ERRORS,
                    f"Quarantining this node would put {figures.quarantined + 1} of "
                    f"{figures.size} nodes in quarantine "
                    f"({rules.quarantined_share(figures.quarantined + 1, figures.size):.1%}), "
                    f"over the suite's cap of {suite.max_quarantined_share:.1%}.",
                    "cap_exceeded",
                )
        errors.raise_if_any()
        now = now or timezone.now()
        if node is None:
            node = Node.objects.create(
                suite=suite, nodeid=nodeid, tier=rules.Tier.REPEAT_BUDGET,
                first_seen=today, last_seen=today,
            )
        server_upper = rules.upper95(fails, n)
        entry = QuarantineEntry.objects.create(
            suite=suite,
            node=node,
            seed_base=seed_base,
            n=n,
            fails=fails,
            upper95=server_upper,
            reported_upper95=reported_upper95,
            upper95_mismatch=rules.upper95_mismatch(reported_upper95, fails, n),
            owner=owner,
            expires=expires,
            evidence=evidence,
            note=note,
            created_at=now,
            created_by=actor,
            updated_at=now,
        )
        record_event(
            suite=suite,
            entry=entry,
            action=AuditEvent.Action.IMPORT if imported else AuditEvent.Action.CREATE,
            actor=actor,
            after=_entry_snapshot(entry),
            note=note,
            at=now,
        )
        bump_ledger_revision(suite)
    return entry


def _locked_open_entry(entry: QuarantineEntry, errors: _Errors) -> QuarantineEntry:
    locked = QuarantineEntry.objects.select_for_update().select_related("node", "suite").get(
        pk=entry.pk
    )
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
    """Push an open entry's expiry out, on new evidence; counted as a renewal."""
    errors = _Errors()
    with transaction.atomic():
        entry = _locked_open_entry(entry, errors)
        new_owner = owner or entry.owner
        _check_fields(
            errors,
            owner=new_owner,
            evidence=evidence,
            expires=expires,
            today=today,
            max_days=entry.suite.max_quarantine_days,
            allow_past=False,
        )
        if evidence == entry.evidence:
            errors.add(
                "evidence",
                "A renewal needs new evidence: this is the entry's current evidence.",
                "evidence_unchanged",
            )
        _check_tier(errors, entry.suite, entry.node.nodeid, entry.node)
        errors.raise_if_any()
        before = _entry_snapshot(entry)
        entry.expires = expires
        entry.evidence = evidence
        entry.owner = new_owner
        entry.renewals += 1
        entry.updated_at = now or timezone.now()
        entry.save(update_fields=["expires", "evidence", "owner", "renewals", "updated_at"])
        record_event(
            suite=entry.suite,
            entry=entry,
            action=AuditEvent.Action.RENEW,
            actor=actor,
            before=before,
            after=_entry_snapshot(entry),
            note=note,
            at=entry.updated_at,
        )
        bump_ledger_revision(entry.suite)
    return entry


def quarantine_clear(
    *, entry: QuarantineEntry, note: str, actor: str, now: datetime | None = None
) -> QuarantineEntry:
    """Close an entry: it leaves the served ledger and stays in history."""
    errors = _Errors()
    if not note or not note.strip():
        errors.add("note", "Say why the entry is cleared (fixed, deleted, …).", "note_required")
    with transaction.atomic():
        entry = _locked_open_entry(entry, errors)
        errors.raise_if_any()
        before = _entry_snapshot(entry)
        entry.cleared_at = entry.updated_at = now or timezone.now()
        entry.cleared_note = note.strip()
        entry.save(update_fields=["cleared_at", "cleared_note", "updated_at"])
        record_event(
            suite=entry.suite,
            entry=entry,
            action=AuditEvent.Action.CLEAR,
            actor=actor,
            before=before,
            after=_entry_snapshot(entry),
            note=entry.cleared_note,
            at=entry.cleared_at,
        )
        bump_ledger_revision(entry.suite)
    return entry


# --- import_ledger ------------------------------------------------------------------------


@dataclass
class ImportResult:
    created: list[QuarantineEntry] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (nodeid, why)
    codes: dict[str, list[str]] = field(default_factory=dict)  # nodeid → refusal codes
    warnings: list[str] = field(default_factory=list)


def _parse_import_row(nodeid: str, row: object) -> dict:
    """The keyword arguments of quarantine_create for one flake_ledger.json row."""
    if not isinstance(row, dict):
        raise ValueError("the entry must be a JSON object")
    if row.get("class", "flake") != "flake":
        raise ValueError(f"class must be \"flake\" (got {row.get('class')!r})")

    def count(name):
        value = row.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a whole number of 0 or more")
        return value

    reported = row.get("upper95")
    if reported is not None and (
        isinstance(reported, bool) or not isinstance(reported, int | float)
        or not 0 <= reported <= 1
    ):
        raise ValueError("upper95 must be a number between 0 and 1")
    seed_base = row.get("seed_base")
    if seed_base is not None and (isinstance(seed_base, bool) or not isinstance(seed_base, int)):
        raise ValueError("seed_base must be a whole number")
    try:
        expires = date.fromisoformat(str(row.get("expires", "")))
    except ValueError:
        raise ValueError("expires must be a date written YYYY-MM-DD") from None
    return {
        "nodeid": nodeid,
        "owner": str(row.get("owner") or ""),
        "evidence": str(row.get("evidence") or ""),
        "expires": expires,
        "n": count("n"),
        "fails": count("fails"),
        "reported_upper95": float(reported) if reported is not None else None,
        "seed_base": seed_base,
    }


def _describe(error: ValidationError) -> str:
    """Each refusal, after the name of the field it concerns."""
    return "; ".join(
        message if name == NON_FIELD_ERRORS else f"{name}: {message}"
        for name, messages in error.message_dict.items()
        for message in messages
    )


def _codes(error: ValidationError) -> list[str]:
    return [e.code for errors in error.error_dict.values() for e in errors]


def ledger_import(*, suite: Suite, ledger: object, actor: str, today: date) -> ImportResult:
    """Import a flake_ledger.json mapping. Each row passes quarantine_create's rules or is
    refused with its reason; a refused row stores nothing. Valid rows are stored together."""
    result = ImportResult()
    if not isinstance(ledger, dict):
        raise ValidationError(
            "The ledger must be a JSON object mapping node ids to entries.", code="not_a_ledger"
        )
    with transaction.atomic():
        for nodeid, row in ledger.items():
            try:
                kwargs = _parse_import_row(nodeid, row)
                with transaction.atomic():
                    entry = quarantine_create(
                        suite=suite, actor=actor, today=today, imported=True,
                        note="Imported from flake_ledger.json", **kwargs,
                    )
            except ValueError as exc:
                result.refused.append((nodeid, str(exc)))
                result.codes[nodeid] = ["invalid_row"]
            except ValidationError as exc:
                result.refused.append((nodeid, _describe(exc)))
                result.codes[nodeid] = _codes(exc)
            else:
                result.created.append(entry)
                if entry.expires < today:
                    result.warnings.append(
                        f"{nodeid}: expired on {entry.expires.isoformat()}; kept as expired, "
                        "so the gate fails it until it is renewed or cleared."
                    )
                if entry.upper95_mismatch:
                    result.warnings.append(
                        f"{nodeid}: reported upper95 {entry.reported_upper95} differs from the "
                        f"server's {entry.upper95:.4f} (flagged upper95_mismatch)."
                    )
        figures = share_figures(suite, today)
        if rules.share_over_cap(figures.quarantined, figures.size, suite.policy):
            result.warnings.append(
                f"The quarantined share is {figures.share:.1%} ({figures.quarantined} of "
                f"{figures.size}), over the cap of {suite.max_quarantined_share:.1%}: "
                "reports will fail with quarantine_cap_exceeded."
            )
    return result
