"""Setting a suite's webhook (issue 20): manage.py set_webhook and the settings page's
Webhook section, for leads. Only http(s) URLs; the signing secret is shown once, when the
webhook is made, and never again: not on the page, not in the audit trail."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils.html import escape

from ledger.models import AuditEvent
from notify.models import Webhook, WebhookPost
from tests.test_notify_webhooks import receiver  # noqa: F401 (a fixture)


def set_webhook(*args) -> str:
    out = io.StringIO()
    call_command("set_webhook", *args, stdout=out)
    return out.getvalue()


def audit_text(suite) -> str:
    return json.dumps(list(AuditEvent.objects.filter(suite=suite).values(
        "before", "after", "note")))


def test_set_webhook_refuses_what_is_not_http(suite):
    for url in ("ftp://hooks.example.com/x", "file:///etc/passwd", "hooks.example.com"):
        with pytest.raises(CommandError, match="http"):
            set_webhook("acme", url)
    assert not Webhook.objects.exists()
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.SETTINGS).exists()


def test_set_webhook_prints_the_secret_once_and_replacing_keeps_it(suite):
    out = set_webhook("acme", "https://hooks.example.com/T1/B2/xyz", "--format", "json")
    webhook = Webhook.objects.get(suite=suite)
    assert out.splitlines()[-1] == webhook.secret
    assert out.count(webhook.secret) == 1
    again = set_webhook("acme", "https://hooks.example.com/other")
    assert webhook.secret not in again and "unchanged" in again
    webhook.refresh_from_db()
    assert (webhook.url, webhook.format) == ("https://hooks.example.com/other", "slack")
    notes = list(AuditEvent.objects.filter(action="settings").values_list("note", flat=True))
    assert sorted(notes) == ["webhook replaced", "webhook set"]
    audit = audit_text(suite)
    assert webhook.secret not in audit and "/T1/B2/xyz" not in audit  # the URL's token neither


@pytest.fixture
def lead_client(client, lead):
    client.force_login(lead)
    return client


def test_the_settings_page_loads_the_section_for_a_lead(lead_client, suite):
    page = lead_client.get(reverse("settings", args=["acme"])).content.decode()
    section_url = reverse("settings_webhook", args=["acme"])
    assert f'hx-get="{section_url}"' in page and 'hx-trigger="load"' in page
    assert f'href="{section_url}"' in page  # without JavaScript, a link to it
    partial = lead_client.get(section_url, headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in partial and 'id="webhook-section"' in partial
    assert '<label for="id_url">URL</label>' in partial
    assert '<label for="id_format">Format</label>' in partial
    assert "No webhook" in partial
    whole = lead_client.get(section_url).content.decode()
    assert "<html" in whole and 'id="webhook-section"' in whole


def test_an_owner_is_refused_the_section(client, owner, suite):
    client.force_login(owner)
    assert client.get(reverse("settings_webhook", args=["acme"])).status_code == 403
    response = client.post(reverse("settings_webhook_save", args=["acme"]),
                           {"url": "https://hooks.example.com/x", "format": "json"})
    assert response.status_code == 403 and not Webhook.objects.exists()


def test_the_secret_is_shown_once_on_the_page_and_never_again(lead_client, suite):
    response = lead_client.post(reverse("settings_webhook_save", args=["acme"]),
                            {"url": "https://hooks.example.com/T1/abc", "format": "json"})
    secret = Webhook.objects.get(suite=suite).secret
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    assert response.content.decode().count(secret) == 1
    for url in (reverse("settings_webhook", args=["acme"]), reverse("settings", args=["acme"])):
        page = lead_client.get(url).content.decode()
        assert secret not in page
        assert "https://hooks.example.com/T1/abc" in page or url.endswith("/settings/")
    assert secret not in audit_text(suite)
    # Replacing the URL from the page keeps the secret, which is not shown.
    response = lead_client.post(reverse("settings_webhook_save", args=["acme"]),
                            {"url": "https://hooks.example.com/T1/def", "format": "slack"},
                            follow=True)
    assert secret not in response.content.decode()
    assert Webhook.objects.get(suite=suite).secret == secret


def test_a_url_that_is_not_http_is_refused_on_the_page(lead_client, suite):
    response = lead_client.post(reverse("settings_webhook_save", args=["acme"]),
                            {"url": "ftp://hooks.example.com/x", "format": "json"})
    assert response.status_code == 200 and not Webhook.objects.exists()
    assert "has-error" in response.content.decode()


def test_send_test_posts_a_sample_and_the_log_shows_it(lead_client, suite, settings, receiver):  # noqa: F811
    settings.WEBHOOKS_ALLOW_PRIVATE_IPS = True
    set_webhook("acme", receiver.url, "--format", "json")
    response = lead_client.post(reverse("settings_webhook_test", args=["acme"]), follow=True)
    assert "Test delivery sent: HTTP 200." in response.content.decode()
    assert json.loads(receiver.requests[0][2])["test"] is True
    logged = WebhookPost.objects.get()
    section = lead_client.get(reverse("settings_webhook", args=["acme"])).content.decode()
    assert str(logged.id) in section and "(test)" in section
    assert AuditEvent.objects.filter(note__startswith="webhook test sent").exists()


def test_removing_the_webhook_is_audited(lead_client, suite):
    set_webhook("acme", "https://hooks.example.com/x")
    lead_client.post(reverse("settings_webhook_remove", args=["acme"]))
    assert not Webhook.objects.exists()
    assert AuditEvent.objects.filter(note="webhook removed", actor="@lea").exists()


def test_without_a_webhook_the_test_and_the_removal_say_there_is_none(lead_client, suite):
    htmx = {"HX-Request": "true"}
    tested = lead_client.post(reverse("settings_webhook_test", args=["acme"]), headers=htmx)
    assert '<p class="notice failed"' in tested.text and "Set a webhook first." in tested.text
    removed = lead_client.post(reverse("settings_webhook_remove", args=["acme"]), headers=htmx)
    assert "No webhook to remove." in removed.text
    assert not AuditEvent.objects.filter(suite=suite, action=AuditEvent.Action.SETTINGS).exists()


def test_with_htmx_each_action_answers_the_section_with_its_notice_focused(
    lead_client, suite, settings, receiver  # noqa: F811
):
    settings.WEBHOOKS_ALLOW_PRIVATE_IPS = True
    htmx = {"headers": {"HX-Request": "true"}}

    def section(name, data=None) -> str:
        response = lead_client.post(reverse(name, args=["acme"]), data or {}, **htmx)
        assert response.status_code == 200
        html = response.content.decode()
        assert "<html" not in html and html.lstrip().startswith('<div class="webhook-section"')
        return html

    made = section("settings_webhook_save", {"url": receiver.url, "format": "json"})
    secret = Webhook.objects.get(suite=suite).secret
    assert made.count(secret) == 1
    assert 'class="token-once" role="alert" tabindex="-1" data-focus' in made
    tested = section("settings_webhook_test")
    assert 'role="status" tabindex="-1" data-focus data-announce>Test delivery sent: HTTP 200.' \
        in tested
    assert str(WebhookPost.objects.get().id) in tested and secret not in tested
    receiver.answers = [404]
    failed = section("settings_webhook_test")
    assert '<p class="notice failed"' in failed and "Test delivery failed: HTTP 404." in failed
    refused = section("settings_webhook_save", {"url": "ftp://x", "format": "json"})
    assert "has-error" in refused and " data-focus " in refused
    removed = section("settings_webhook_remove")
    assert "Webhook removed." in removed and "No webhook" in removed


# A private address in each spelling a resolver reads, and what the guard resolved it to.
PRIVATE_URLS = [
    ("http://127.0.0.1/hook", "127.0.0.1 resolves to 127.0.0.1, a loopback address"),
    ("http://2130706433/hook", "2130706433 resolves to 127.0.0.1, a loopback address"),
    ("http://0177.0.0.1/hook", "0177.0.0.1 resolves to 127.0.0.1, a loopback address"),
    ("http://0x7f000001/hook", "0x7f000001 resolves to 127.0.0.1, a loopback address"),
    ("http://[::1]/hook", "::1 resolves to ::1, a loopback address"),
    ("http://[::ffff:127.0.0.1]/hook",
     "::ffff:127.0.0.1 resolves to 127.0.0.1, a loopback address"),
    ("https://10.0.0.7/hook", "10.0.0.7 resolves to 10.0.0.7, a private address"),
    ("http://169.254.169.254/latest", "resolves to 169.254.169.254, a link-local address"),
]
PRIVATE_IDS = ["loopback", "decimal", "octal", "hex", "ipv6", "ipv4-mapped", "private",
               "link-local"]


@pytest.mark.parametrize(("url", "said"), PRIVATE_URLS, ids=PRIVATE_IDS)
def test_set_webhook_refuses_a_private_address_naming_it_as_resolved(suite, settings, url,
                                                                     said):
    settings.WEBHOOKS_ALLOW_PRIVATE_IPS = False
    with pytest.raises(CommandError) as refused:
        set_webhook("acme", url)
    assert said in str(refused.value)
    assert not Webhook.objects.exists()
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.SETTINGS).exists()


@pytest.mark.parametrize(("url", "said"), PRIVATE_URLS, ids=PRIVATE_IDS)
def test_the_page_refuses_a_private_address_naming_it_as_resolved(lead_client, suite, settings,
                                                                  url, said):
    settings.WEBHOOKS_ALLOW_PRIVATE_IPS = False
    response = lead_client.post(reverse("settings_webhook_save", args=["acme"]),
                            {"url": url, "format": "json"})
    assert response.status_code == 200 and not Webhook.objects.exists()
    assert escape(said) in response.content.decode()


def test_with_the_switch_on_a_private_address_is_saved(suite, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_IPS = True
    set_webhook("acme", "http://127.0.0.1:8080/hook")
    assert Webhook.objects.get(suite=suite).url == "http://127.0.0.1:8080/hook"
