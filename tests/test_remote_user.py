"""Sign-in through the company's identity provider (issue 22): behind an authenticating proxy
the board trusts the header REMOTE_USER_HEADER names. Off by default, and then the header is
ignored; on, a new user is created with no suite access and an existing one is signed in.
The API answers to its Bearer tokens only, whatever the header says."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, override_settings
from django.urls import reverse

from ledger.models import Membership
from web.remote_user import meta_key

User = get_user_model()
HEADER = "X-Forwarded-User"
ON = override_settings(REMOTE_USER_HEADER=HEADER)


def as_proxy(name: str) -> dict:
    return {"headers": {HEADER: name}}


def test_the_header_is_ignored_when_the_setting_is_off(suite, lead):
    response = Client().get(reverse("overview", args=[suite.slug]), **as_proxy("lea"))
    assert response.status_code == 302 and reverse("login") in response["Location"]
    assert not User.objects.exclude(pk=lead.pk).exists()
    assert Client().get(reverse("home"), **as_proxy("newcomer")).status_code == 302
    assert not User.objects.filter(username="newcomer").exists()


@pytest.mark.parametrize("header", ["X-Forwarded-User", "x-forwarded-user",
                                    "HTTP_X_FORWARDED_USER"])
def test_the_header_may_be_named_either_way(header):
    assert meta_key(header) == "HTTP_X_FORWARDED_USER"


@ON
def test_a_new_user_is_created_with_no_suite_access(suite):
    client = Client()
    response = client.get(reverse("home"), **as_proxy("newcomer@example.com"))
    assert response.status_code == 200
    user = User.objects.get(username="newcomer@example.com")
    assert not user.has_usable_password() and not user.is_staff
    assert not Membership.objects.filter(user=user).exists()
    assert response.context["suites"] == []
    assert client.get(reverse("overview", args=[suite.slug]),
                      **as_proxy("newcomer@example.com")).status_code in (403, 404)


@ON
def test_an_existing_user_is_signed_in(suite, lead):
    client = Client()
    response = client.get(reverse("overview", args=[suite.slug]), **as_proxy("lea"))
    assert response.status_code == 200 and response.wsgi_request.user == lead
    # The session follows the header: another name is another person.
    response = client.get(reverse("home"), **as_proxy("someone-else"))
    assert response.wsgi_request.user.get_username() == "someone-else"


@ON
@pytest.mark.parametrize("name", ["", "   ", "x" * 151, "bad\x07name"])
def test_a_name_the_user_model_cannot_hold_signs_no_one_in(db, name):
    response = Client().get(reverse("home"), **as_proxy(name))
    assert response.status_code == 302
    assert not User.objects.exists()


@ON
def test_the_api_answers_to_its_tokens_only(suite, lead, token):
    client = Client()
    ledger = reverse("api:ledger", kwargs={"suite": suite.slug})
    answer = client.get(ledger, **as_proxy("lea"))
    assert answer.status_code == 401 and answer.json()["error"] == "unauthorized"
    answer = client.get(ledger, headers={HEADER: "lea", "Authorization": f"Bearer {token}"})
    assert answer.status_code == 200
