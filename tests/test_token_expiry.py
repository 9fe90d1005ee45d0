"""Tokens that expire (issue 22): a token may be given an expiry when it is created (the
service, the settings page, ``manage.py create_token``); from that instant on it is 401
``token_expired``, with the Bearer challenge of every refused token; the settings page warns
of tokens that expire within 14 days."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from ledger.models import ApiToken, AuditEvent
from ledger.tokens import TokenExpired, token_authenticate, token_create, token_expiry


def expire(token: ApiToken) -> None:
    """Move the token's expiry into the past (no path of the board makes one so)."""
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))


def api_get(client, name: str, raw: str, **kwargs):
    return client.get(reverse(f"api:{name}", kwargs=kwargs), HTTP_AUTHORIZATION=f"Bearer {raw}")


def test_a_token_works_until_its_expiry(suite):
    later = timezone.now() + timedelta(days=3)
    token, raw = token_create(suite=suite, scope="read", actor="@lea", expires_at=later)
    assert token_authenticate(raw) == token
    expire(token)
    with pytest.raises(TokenExpired):
        token_authenticate(raw)
    assert token_authenticate(raw[:-2] + "zz") is None  # only the genuine token learns why


def test_a_token_without_expiry_never_expires(suite):
    token, raw = token_create(suite=suite, scope="read", actor="@lea")
    assert token.expires_at is None and token_authenticate(raw) == token


def test_an_expiry_in_the_past_is_refused_and_nothing_is_stored(suite):
    with pytest.raises(ValidationError, match="in the future"):
        token_create(suite=suite, scope="read", actor="@lea",
                     expires_at=timezone.now() - timedelta(minutes=1))
    assert not ApiToken.objects.exists() and not AuditEvent.objects.exists()


def test_the_expiry_is_audited(suite):
    later = timezone.now() + timedelta(days=3)
    token_create(suite=suite, scope="read", actor="@lea", expires_at=later)
    assert AuditEvent.objects.get().after["expires_at"] == later.isoformat()


@pytest.mark.parametrize(("name", "kwargs"), [("ledger", {"suite": "acme"}), ("token", {})])
def test_an_expired_token_is_401_saying_it_expired(client, suite, name, kwargs):
    token, raw = token_create(suite=suite, scope="write", actor="@lea",
                              expires_at=timezone.now() + timedelta(days=1))
    assert api_get(client, name, raw, **kwargs).status_code == 200
    expire(token)
    response = api_get(client, name, raw, **kwargs)
    assert response.status_code == 401
    answer = response.json()
    assert answer["error"] == "token_expired" and "expired" in answer["message"]
    assert answer["details"] == []
    assert 'error="invalid_token"' in response["WWW-Authenticate"]
    assert response["WWW-Authenticate"].startswith('Bearer realm="flakeboard"')


def test_an_expired_token_is_not_marked_used(client, suite):
    token, raw = token_create(suite=suite, scope="read", actor="@lea",
                              expires_at=timezone.now() + timedelta(days=1))
    expire(token)
    api_get(client, "token", raw)
    assert ApiToken.objects.get(pk=token.pk).last_used_at is None


def test_a_day_means_through_that_day_utc():
    day = datetime(2026, 3, 9).date()
    assert token_expiry(day) == datetime(2026, 3, 10, tzinfo=UTC)


# --- the settings page ---------------------------------------------------------------


def test_the_settings_form_takes_an_expiry_day(client_for, suite, lead, today):
    day = today + timedelta(days=30)
    response = client_for(lead).post(
        reverse("settings_token_create", args=[suite.slug]),
        {"name": "ci", "scope": "read", "expires_at": day.isoformat()},
        follow=True,
    )
    assert response.status_code == 200 and response.context["new_token_raw"]
    assert ApiToken.objects.get().expires_at == token_expiry(day)


def test_the_settings_form_refuses_a_past_day(client_for, suite, lead, today):
    response = client_for(lead).post(
        reverse("settings_token_create", args=[suite.slug]),
        {"name": "ci", "scope": "read", "expires_at": (today - timedelta(days=2)).isoformat()},
    )
    assert "in the future" in response.content.decode()
    assert not ApiToken.objects.exists()


def test_the_settings_page_warns_of_tokens_expiring_within_14_days(client_for, suite, lead):
    now = timezone.now()
    soon = token_create(suite=suite, scope="read", actor="@lea", name="soon",
                        expires_at=now + timedelta(days=13))[0]
    token_create(suite=suite, scope="read", actor="@lea", name="later",
                 expires_at=now + timedelta(days=15))
    token_create(suite=suite, scope="read", actor="@lea", name="never")
    gone = token_create(suite=suite, scope="read", actor="@lea", name="gone",
                        expires_at=now + timedelta(days=1))[0]
    expire(gone)
    response = client_for(lead).get(reverse("settings", args=[suite.slug]))
    assert [t.pk for t in response.context["expiring_tokens"]] == [soon.pk]
    html = response.content.decode()
    assert 'id="tokens-expiring"' in html and "expires within 14 days" in html
    assert '<span class="badge st-expired">expired</span>' in html


def test_no_warning_without_expiring_tokens(client_for, suite, lead):
    token_create(suite=suite, scope="read", actor="@lea")
    html = client_for(lead).get(reverse("settings", args=[suite.slug])).content.decode()
    assert 'id="tokens-expiring"' not in html


# --- manage.py create_token ----------------------------------------------------------


def test_create_token_takes_an_expiry(suite, today):
    day = today + timedelta(days=7)
    out = StringIO()
    call_command("create_token", "acme", "--scope", "read", "--expires", day.isoformat(),
                 stdout=out, stderr=StringIO())
    assert ApiToken.objects.get().expires_at == token_expiry(day)
    assert token_authenticate(out.getvalue().strip().splitlines()[-1]) is not None


@pytest.mark.parametrize("value", ["tomorrow", "2026-02-30", "2030-01-01T10:00", "2001-01-01"])
def test_create_token_refuses_a_bad_expiry(suite, value):
    with pytest.raises(CommandError):
        call_command("create_token", "acme", "--scope", "read", "--expires", value,
                     stdout=StringIO(), stderr=StringIO())
    assert not ApiToken.objects.exists()
