"""The settings page's members and API tokens (SPEC 6): members added, changed and
removed (the last lead stays), and a token shown once and stored as a digest. The page's
other sections are in test_settings_page.py."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

from ledger.models import ApiToken, AuditEvent, Membership, Role
from ledger.settings_services import member_change, member_drop
from ledger.tokens import token_authenticate
from tests.test_settings_page import settings_events, url

# --- members -------------------------------------------------------------------------


def test_members_are_added_changed_and_removed(client_for, suite, lead):
    newcomer = get_user_model().objects.create_user("nia", password="x")
    client = client_for(lead)
    client.post(url("settings_member_set", suite), {"username": "nia", "role": "viewer"})
    assert Membership.objects.get(suite=suite, user=newcomer).role == Role.VIEWER
    client.post(url("settings_member_set", suite), {"username": "nia", "role": "owner"})
    membership = Membership.objects.get(suite=suite, user=newcomer)
    assert membership.role == Role.OWNER
    response = client.post(url("settings_member_remove", suite, membership.pk))
    assert response.status_code == 302
    assert not Membership.objects.filter(suite=suite, user=newcomer).exists()
    events = settings_events(suite).filter(action=AuditEvent.Action.MEMBER)
    assert [e.after.get("role") for e in events] == ["viewer", "owner", None]


def test_an_unknown_user_is_explained(client_for, suite, lead):
    response = client_for(lead).post(url("settings_member_set", suite),
                                     {"username": "ghost", "role": "viewer"})
    assert response.status_code == 200
    assert "There is no user “ghost”" in response.content.decode()


def test_the_last_lead_stays(client_for, suite, lead):
    membership = Membership.objects.get(suite=suite, user=lead)
    with pytest.raises(ValidationError, match="at least one lead"):
        member_change(suite=suite, username="lea", role="owner", actor="@lea")
    with pytest.raises(ValidationError, match="at least one lead"):
        member_drop(membership=membership, actor="@lea")
    response = client_for(lead).post(url("settings_member_remove", suite, membership.pk),
                                     follow=True)
    assert "at least one lead" in response.content.decode()
    assert Membership.objects.get(pk=membership.pk).role == Role.LEAD
    assert not settings_events(suite).exists()


# --- tokens --------------------------------------------------------------------------


def test_a_token_is_shown_once_and_stored_as_a_digest(client_for, suite, lead):
    client = client_for(lead)
    response = client.post(url("settings_token_create", suite), {"name": "ci main",
                                                                 "scope": "write"})
    assert response.status_code == 302  # post, redirect, get: a reload makes no second token
    assert response["Location"] == url("settings", suite) + "#new-token-once"
    shown = client.get(response["Location"])
    assert "no-store" in shown["Cache-Control"]
    raw = shown.context["new_token_raw"]
    assert raw.startswith("fbw_") and raw in shown.content.decode()
    token = ApiToken.objects.get()
    assert raw not in (token.prefix, token.digest, token.name)
    assert token_authenticate(raw) == token
    later = client.get(url("settings", suite)).content.decode()
    assert raw not in later and f"{token.prefix}…" in later and "ci main" in later
    assert ApiToken.objects.count() == 1
    client.post(url("settings_token_revoke", suite, token.pk))
    assert token_authenticate(raw) is None
    assert [e.note for e in settings_events(suite)] == ["created", "revoked"]
