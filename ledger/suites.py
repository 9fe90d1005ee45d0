"""Suites and their members."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import transaction

from .audit import record_event
from .locks import lock_suite
from .models import AuditEvent, Membership, Role, Suite


def suite_create(*, slug: str, name: str = "") -> Suite:
    validate_slug(slug)
    if Suite.objects.filter(slug=slug).exists():
        raise ValidationError({"slug": f"A suite “{slug}” already exists."})
    return Suite.objects.create(slug=slug, name=name or slug)


def member_set(*, suite: Suite, user, role: str, actor: str) -> Membership:
    role = Role(role)
    with transaction.atomic():
        lock_suite(suite.pk)
        membership = Membership.objects.filter(suite=suite, user=user).first()
        before = {"user": user.username, "role": membership.role} if membership else {}
        if membership is None:
            membership = Membership.objects.create(suite=suite, user=user, role=role)
        elif membership.role != role:
            membership.role = role
            membership.save(update_fields=["role"])
        else:
            return membership
        record_event(
            suite=suite,
            action=AuditEvent.Action.MEMBER,
            actor=actor,
            before=before,
            after={"user": user.username, "role": role.value},
        )
    return membership


def member_remove(*, membership: Membership, actor: str) -> None:
    with transaction.atomic():
        lock_suite(membership.suite_id)
        record_event(
            suite=membership.suite,
            action=AuditEvent.Action.MEMBER,
            actor=actor,
            before={"user": membership.user.username, "role": membership.role},
            note="removed",
        )
        membership.delete()
