"""Tokens that expire, in the leads' digest (issue 22): ``manage.py notify`` tells each lead
of a suite the suite's API tokens that expire within 14 days (their name, expiry and a link
to the settings page), through a real SMTP server on 127.0.0.1, at most once a day each."""

from __future__ import annotations

import io
from datetime import datetime, timedelta
from urllib.parse import urlsplit

import pytest
from django.core.management import call_command
from django.urls import resolve
from django.utils import timezone

from ledger.models import QuarantineEntry, Suite
from ledger.tokens import token_create, token_expiry, token_revoke
from notify.models import Delivery, Webhook
from runs.ingest import report_ingest
from tests import test_notify_email
from tests.helpers import body, measurement
from tests.test_gate_status import FLAKY, quarantine
from tests.test_notify_email import BASE_URL, FINLEY, LEA, notify, subject, text

smtp = test_notify_email.smtp  # the real SMTP server on 127.0.0.1 (a fixture)


def soon(days: float):
    return timezone.now() + timedelta(days=days)


@pytest.fixture
def tokens(settings, suite, other_suite, lead, owner, today):
    """The suite's tokens: "ci" working through the day after tomorrow (told), and one
    expiring in 20 days, one without expiry and one revoked (none told); another suite's
    token expiring tomorrow."""
    settings.BASE_URL = BASE_URL
    for user, address in [(lead, LEA), (owner, FINLEY)]:
        user.email = address
        user.save()
    made = {
        "ci": token_create(suite=suite, scope="write", actor="@lea", name="ci",
                           expires_at=token_expiry(today + timedelta(days=2)))[0],
        "later": token_create(suite=suite, scope="read", actor="@lea", expires_at=soon(20))[0],
        "never": token_create(suite=suite, scope="read", actor="@lea")[0],
        "revoked": token_create(suite=suite, scope="read", actor="@lea",
                                expires_at=soon(2))[0],
        "other": token_create(suite=other_suite, scope="read", actor="@otto",
                              expires_at=soon(1))[0],
    }
    token_revoke(token=made["revoked"], actor="@lea")
    return made


def test_the_leads_are_told_of_the_suites_expiring_tokens(smtp, tokens):
    notify()
    assert [m["To"] for m in smtp.messages] == [LEA]  # not the owner; no other suite's
    [lea] = smtp.messages
    assert subject(lea) == "Flakeboard: 1 token expiring in acme"
    content = text(lea)
    ci = tokens["ci"]
    assert "API tokens expiring within 14 days (1)" in content
    assert f"- ci ({ci.prefix}…), write scope\n" in content
    assert f"  expires {ci.expires_at:%Y-%m-%d %H:%M} UTC (in 3 days)\n" in content
    assert ci.expires_at.time() == datetime.min.time()  # at the midnight after its last day
    for name in ("later", "never", "revoked", "other"):
        assert tokens[name].prefix not in content
    [link] = [line.split(": ", 1)[1] for line in content.splitlines()
              if line.startswith("  settings: ")]
    parts = urlsplit(link)
    assert f"{parts.scheme}://{parts.netloc}" == BASE_URL and parts.fragment == "tokens"
    match = resolve(parts.path)
    assert (match.url_name, match.kwargs) == ("settings", {"suite": "acme"})


def test_each_token_is_told_once_a_day(smtp, tokens, suite):
    notify()
    [delivery] = Delivery.objects.all()
    assert (delivery.recipient, delivery.kind, delivery.key, delivery.entry) == (
        LEA, Delivery.Kind.EXPIRING, f"token:{tokens['ci'].pk}", None)
    notify()
    assert len(smtp.messages) == 1  # the same day: nothing new
    # A new token expiring soon is told the same day, alone.
    late = token_create(suite=suite, scope="read", actor="@lea", name="nightly",
                        expires_at=soon(1))[0]
    notify()
    assert len(smtp.messages) == 2
    assert late.prefix in text(smtp.messages[1]) and tokens["ci"].prefix not in text(
        smtp.messages[1])
    # The next day, each is told again.
    Delivery.objects.update(day=timezone.now().date() - timedelta(days=1))
    notify()
    assert len(smtp.messages) == 3
    assert subject(smtp.messages[2]) == "Flakeboard: 2 tokens expiring in acme"


def test_beside_the_unreachable_owners_items_in_one_digest(smtp, tokens, suite, today):
    report_ingest(suite=suite, body=body([measurement(FLAKY.format(i)) for i in range(40)]),
                  actor="ci")
    Suite.objects.filter(pk=suite.pk).update(max_quarantined_share=0.5)
    entry = quarantine(suite, 1, today, days=-1)
    QuarantineEntry.objects.filter(pk=entry.pk).update(owner="@ghost")
    notify()
    [lea] = smtp.messages
    assert subject(lea) == "Flakeboard: 1 expired, 1 token expiring in acme"
    content = text(lea)
    assert content.index("API tokens expiring") < content.index("Unreachable owners")


def test_without_a_lead_with_an_e_mail_staff_are_told_and_without_staff_it_is_said(
    smtp, tokens, lead, staff
):
    lead.email = ""
    lead.save()
    staff.email = "stella@example.com"
    staff.save()
    notify("--suite", "acme")
    assert [m["To"] for m in smtp.messages] == ["stella@example.com"]
    assert tokens["ci"].prefix in text(smtp.messages[0])
    staff.delete()
    err = io.StringIO()
    call_command("notify", "--suite", "acme", stdout=io.StringIO(), stderr=err)
    assert "acme: 1 item with nobody to tell" in err.getvalue()


def test_a_dry_run_prints_it_and_the_webhook_does_not_carry_it(smtp, tokens, suite):
    Webhook.objects.create(suite=suite, url="https://hooks.example.com/x", secret="s",
                           created_at=timezone.now())
    out = notify("--dry-run")
    assert smtp.messages == [] and not Delivery.objects.exists()
    assert f"To: {LEA}\nSubject: Flakeboard: 1 token expiring in acme" in out
    assert f"- ci ({tokens['ci'].prefix}…), write scope" in out
    # The webhook carries the entries' items: a token's expiry is for the leads alone.
    assert "acme: 0 items would be posted to the webhook." in out
