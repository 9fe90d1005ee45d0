"""The overview, the health check and sign-in, on the demo suite and an empty one."""

import pytest
from django.core.management import call_command
from django.urls import reverse

from ledger.models import QuarantineEntry, Suite


def test_healthz_answers_when_the_database_does(client, db):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"database": "ok"}


def test_signed_out_is_sent_to_sign_in(client, suite):
    response = client.get(reverse("overview", args=[suite.slug]))
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_outsider_gets_404(client_for, outsider, suite):
    assert client_for(outsider).get(reverse("overview", args=[suite.slug])).status_code == 404


def test_empty_overview_explains_what_to_do(client_for, viewer, suite):
    response = client_for(viewer).get(reverse("overview", args=[suite.slug]))
    assert response.status_code == 200
    assert b"No flake report yet" in response.content


@pytest.mark.django_db
def test_demo_is_idempotent_and_has_every_state(client):
    call_command("demo", stdout=None)
    call_command("demo")
    suite = Suite.objects.get(slug="demo")
    from django.utils import timezone

    today = timezone.now().date()
    states = {entry.state(today) for entry in QuarantineEntry.objects.select_related("node")}
    assert states >= {"active", "expiring", "expired", "cleared", "tier_violation"}
    assert suite.reports.count() == 90 and suite.batches.count() == 180
    client.login(username="lead", password="flakeboard-demo")
    response = client.get(reverse("overview", args=["demo"]))
    assert response.status_code == 200
    assert b"expired (gate failing)" in response.content
