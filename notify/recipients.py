"""Who reads a digest: an owner's address, and the suite's leads for owners the board
cannot reach (SPEC 6a's owner handles)."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.db.models import Q

from ledger.models import Role, Suite


def _handle_user(owner: str) -> str | None:
    """The user name an ``@name`` handle names; None for an e-mail or an ``@org/team``."""
    if owner.startswith("@") and "/" not in owner:
        return owner[1:]
    return None


def _readers(suite: Suite):
    """Active users with an e-mail who may read the suite: its members and staff. A digest
    shows the suite's entries, so a handle naming an outsider does not reach them."""
    return (
        get_user_model().objects.filter(is_active=True).exclude(email="")
        .filter(Q(memberships__suite=suite) | Q(is_staff=True)).distinct()
    )


def owner_addresses(suite: Suite, owners: Iterable[str]) -> dict[str, str | None]:
    """Each owner's e-mail address, or None when the board cannot reach them: a handle of
    no reader of the suite, a reader without an e-mail, a team handle."""
    owners = set(owners)
    names = {name for owner in owners if (name := _handle_user(owner))}
    emails = dict(_readers(suite).filter(username__in=names).values_list("username", "email"))
    found: dict[str, str | None] = {}
    for owner in owners:
        if (name := _handle_user(owner)) is not None:
            found[owner] = emails.get(name)
        elif not owner.startswith("@"):
            found[owner] = owner  # an e-mail owner is used as it is
        else:
            found[owner] = None
    return found


def lead_addresses(suite: Suite) -> list[str]:
    """Where an unreachable owner's items go: the suite's leads, or staff (who lead every
    suite) when no lead has an e-mail."""
    leads = _readers(suite).filter(memberships__suite=suite, memberships__role=Role.LEAD)
    for readers in (leads, _readers(suite).filter(is_staff=True)):
        if addresses := sorted(set(readers.values_list("email", flat=True))):
            return addresses
    return []
