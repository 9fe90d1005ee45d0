"""A suite's settings: policy numbers, the fixture pin, its members, and the removal of a
connection to a service outside the board (its webhook, its issue tracker).

Each change is checked against the bounds the model declares, stored, and written to the
audit trail in one transaction. A policy change also bumps the ledger revision, since it
changes what the gate decides and what the full ledger view reports.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Integral, Real

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.utils import timezone

from flakeboard import rules

from . import messages
from .audit import bump_ledger_revision, record_event
from .clearance import ready_flags_refresh
from .locks import lock_suite
from .models import AuditEvent, Membership, Role, Suite
from .suites import member_remove, member_set

POLICY_FIELDS = ("max_upper_rate", "min_runs", "max_quarantined_share", "max_quarantine_days",
                 "clear_after_clean_measurements")
PIN_FIELDS = ("fixture_manifest", "fixture_seed")


def _snapshot(suite: Suite, names) -> dict:
    return {name: getattr(suite, name) for name in names}


def _not_a_number(model_field, value) -> str | None:
    """Why ``value`` cannot be stored in the numeric ``model_field``, or None. The range
    validators let NaN through (every comparison with it is false), and SQLite stores a
    NaN as NULL."""
    if value is None or not isinstance(model_field, models.FloatField | models.IntegerField):
        return None
    if isinstance(value, bool):
        return f"{model_field.name} must be a number (got {value!r})."
    if isinstance(model_field, models.FloatField) and not (
        isinstance(value, Real) and math.isfinite(value)
    ):
        return f"{model_field.name} must be a finite number (got {value!r})."
    if isinstance(model_field, models.IntegerField) and not isinstance(value, Integral):
        return f"{model_field.name} must be a whole number (got {value!r})."
    return None


def _check_bounds(suite: Suite, values: dict) -> None:
    """Validate ``values`` against the Suite fields' own validators, all errors at once."""
    errors = {}
    for name, value in values.items():
        model_field = Suite._meta.get_field(name)
        if problem := _not_a_number(model_field, value):
            errors[name] = [problem]
            continue
        try:
            model_field.clean(value, suite)
        except ValidationError as exc:
            errors[name] = exc.messages
    if errors:
        raise ValidationError(errors)


def _update(*, suite: Suite, values: dict, actor: str, note: str, bump: bool) -> Suite:
    with transaction.atomic():
        locked = lock_suite(suite.pk)
        before = _snapshot(locked, values)
        if before == values:
            return locked
        for name, value in values.items():
            setattr(locked, name, value)
        locked.save(update_fields=list(values))
        changed = [name for name in values if before[name] != values[name]]
        record_event(
            suite=locked,
            action=AuditEvent.Action.SETTINGS,
            actor=actor,
            before={name: before[name] for name in changed},
            after={name: values[name] for name in changed},
            note=note,
        )
        if bump:
            bump_ledger_revision(locked)
            locked.refresh_from_db(fields=["ledger_revision"])
    return locked


def policy_update(
    *,
    suite: Suite,
    actor: str,
    max_upper_rate: float,
    min_runs: int,
    max_quarantined_share: float,
    max_quarantine_days: int,
    clear_after_clean_measurements: int | None = None,
    note: str = "",
) -> Suite:
    """Set the suite's policy numbers; refused with every out-of-bounds field named.
    Without ``clear_after_clean_measurements`` the suite keeps its count; a new count sets
    every open entry's ready-to-clear flag again."""
    values = {
        "max_upper_rate": max_upper_rate,
        "min_runs": min_runs,
        "max_quarantined_share": max_quarantined_share,
        "max_quarantine_days": max_quarantine_days,
    }
    if clear_after_clean_measurements is not None:
        values["clear_after_clean_measurements"] = clear_after_clean_measurements
    _check_bounds(suite, values)
    with transaction.atomic():
        locked = _update(suite=suite, values=values, actor=actor, note=note or "policy",
                         bump=True)
        if clear_after_clean_measurements is not None:
            ready_flags_refresh(suite=locked, now=timezone.now())
    return locked


def pin_manifest_clean(manifest: str | None) -> str:
    """A typed pin's manifest as it is stored: blank (no pin), or the digest in its canonical
    form (``rules.canonical_digest``); a ValidationError naming fixture_manifest for
    anything else, a digest that is not sha256's 64 hex digits included (``rules.pin_problem``).
    The settings page, the admin and the demo all take a pin through it."""
    manifest = (manifest or "").strip()
    if rules.has_control_chars(manifest):
        raise ValidationError({"fixture_manifest": "The digest may not hold control characters."})
    if not manifest:
        return manifest
    max_length = Suite._meta.get_field("fixture_manifest").max_length
    if (problem := rules.pin_problem(manifest, max_length)) is not None:
        raise ValidationError({"fixture_manifest": messages.pin_message(problem, max_length)})
    return rules.canonical_digest(manifest)


def fixture_pin_set(*, suite: Suite, actor: str, manifest: str, seed: int | None) -> Suite:
    """Pin the fixture manifest digest and seed; an empty manifest removes the pin."""
    manifest = pin_manifest_clean(manifest)
    values = {"fixture_manifest": manifest, "fixture_seed": seed if manifest else None}
    _check_bounds(suite, values)
    note = "fixture pin set" if manifest else "fixture pin removed"
    return _update(suite=suite, values=values, actor=actor, note=note, bump=False)


def badge_visibility_set(*, suite: Suite, actor: str, public: bool) -> Suite:
    """Let anyone with its address see the suite's status badge, or only its members."""
    note = "status badge made public" if public else "status badge made private"
    return _update(suite=suite, values={"public_badge": bool(public)}, actor=actor, note=note,
                   bump=False)


def auto_clear_set(*, suite: Suite, actor: str, on: bool) -> Suite:
    """Let ``manage.py notify`` clear the suite's ready entries itself, or not (the default)."""
    note = "auto-clear turned on" if on else "auto-clear turned off"
    return _update(suite=suite, values={"auto_clear": bool(on)}, actor=actor, note=note,
                   bump=False)


def junit_share_set(*, suite: Suite, actor: str, share: float) -> Suite:
    """Set the share of failing tests above which a JUnit file is taken for a broken runner
    (an infrastructure failure, left out of flaky-test detection). Not part of the gate."""
    values = {"junit_infrastructure_share": share}
    _check_bounds(suite, values)
    return _update(suite=suite, values=values, actor=actor,
                   note="JUnit infrastructure share", bump=False)


def new_tests_set(*, suite: Suite, actor: str, runs: int, share: float) -> Suite:
    """Set the new-test guard's numbers (docs/new-tests.md): how many times gate --measure
    runs each new tier-2 test, and the largest share of a selection it measures so. They
    change what CI measures, not how the board judges it."""
    values = {"new_test_runs": runs, "new_test_share": share}
    _check_bounds(suite, values)
    return _update(suite=suite, values=values, actor=actor, note="new-test guard",
                   bump=False)


def measure_budget_set(*, suite: Suite, actor: str, seconds: int) -> Suite:
    """Set the seconds gate --measure may spend on the tier-2 tests a patch calls for (SPEC
    2.4c). It changes what CI measures, not how the board judges it."""
    values = {"measure_budget": seconds}
    _check_bounds(suite, values)
    return _update(suite=suite, values=values, actor=actor, note="measure budget",
                   bump=False)


def default_branch_set(*, suite: Suite, actor: str, branch: str) -> Suite:
    """Set the branch whose CI runs size the test set (docs/test-set.md). It changes the
    quarantined share, not what the served ledger holds."""
    values = {"default_branch": branch.strip()}
    _check_bounds(suite, values)
    return _update(suite=suite, values=values, actor=actor, note="default branch",
                   bump=False)


def connection_remove(*, suite: Suite, model: type[models.Model], actor: str,
                      shown: Callable[[models.Model], dict], note: str) -> bool:
    """Remove the suite's row of ``model``, of which a suite has at most one (its webhook,
    its issue tracker), audited with what it was as ``shown`` gives it (never a secret);
    False when the suite has none."""
    with transaction.atomic():
        lock_suite(suite.pk)
        row = model.objects.filter(suite=suite).first()
        if row is None:
            return False
        record_event(suite=suite, action=AuditEvent.Action.SETTINGS, actor=actor,
                     before=shown(row), note=note)
        row.delete()
    return True


def _other_leads(suite: Suite, membership: Membership) -> bool:
    leads = Membership.objects.filter(suite=suite, role=Role.LEAD).exclude(pk=membership.pk)
    return leads.exists()


def _last_lead_error(suite: Suite) -> ValidationError:
    return ValidationError(
        f"{suite.slug} needs at least one lead: make someone else a lead first.",
        code="last_lead",
    )


def member_change(*, suite: Suite, username: str, role: str, actor: str) -> Membership:
    """Add a user to the suite with a role, or change their role."""
    try:
        role = Role(role)
    except ValueError:
        raise ValidationError({"role": "The role is viewer, owner or lead."}) from None
    user = get_user_model().objects.filter(username=(username or "").strip()).first()
    if user is None:
        raise ValidationError({"username": f"There is no user “{username}”."})
    with transaction.atomic():
        lock_suite(suite.pk)
        current = Membership.objects.filter(suite=suite, user=user).first()
        if (
            current is not None
            and current.role == Role.LEAD
            and role != Role.LEAD
            and not _other_leads(suite, current)
        ):
            raise _last_lead_error(suite)
        return member_set(suite=suite, user=user, role=role, actor=actor)


def member_drop(*, membership: Membership, actor: str) -> None:
    """Remove a member; the suite's last lead stays."""
    with transaction.atomic():
        lock_suite(membership.suite_id)
        if membership.role == Role.LEAD and not _other_leads(membership.suite, membership):
            raise _last_lead_error(membership.suite)
        member_remove(membership=membership, actor=actor)
