"""Who may do what in a suite (SPEC 6a): viewer < owner < lead; staff lead every suite.

Outsiders get 404 for the suite, so a suite's existence is not revealed; members whose
role is too low get 403.
"""

from __future__ import annotations

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.views.decorators.http import require_http_methods

from ledger.models import ROLE_RANK, Membership, Role, Suite


def actor_label(user) -> str:
    return f"@{user.get_username()}"


def user_handle(user) -> str:
    """A user's own owner handle: what "mine" matches on the ledger."""
    return f"@{user.get_username()}"


def role_in(suite: Suite, user) -> Role | None:
    if not user.is_authenticated:
        return None
    if user.is_staff:
        return Role.LEAD
    role = (
        Membership.objects.filter(suite=suite, user=user).values_list("role", flat=True).first()
    )
    return Role(role) if role else None


def can(role: Role | None, needed: Role) -> bool:
    return role is not None and ROLE_RANK[role] >= ROLE_RANK[needed]


def suite_for(request, slug: str, needed: Role = Role.VIEWER) -> Suite:
    """The suite, with ``request.role`` set; 404 for outsiders, 403 for too low a role."""
    suite = Suite.objects.filter(slug=slug).first()
    role = role_in(suite, request.user) if suite is not None else None
    if suite is None or role is None:
        raise Http404("No such suite.")
    if not can(role, needed):
        raise PermissionDenied(f"This needs the {needed.label.lower()} role in {suite.slug}.")
    request.role = role
    return suite


def suites_for(user):
    if user.is_staff:
        return Suite.objects.all()
    return Suite.objects.filter(memberships__user=user)


def for_leads(method: str):
    """A settings view: signed in, the one method it answers, and the lead's own suite,
    which the view receives in place of its slug."""

    def decorate(view):
        @login_required
        @require_http_methods([method])
        @wraps(view)
        def checked(request, suite, **kwargs):
            return view(request, suite_for(request, suite, Role.LEAD), **kwargs)

        return checked

    return decorate
