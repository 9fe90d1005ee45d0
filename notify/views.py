"""The settings page's Webhook section, for leads: the settings page includes it
(templates/notify/_webhook_section.html) and loads it from here, so the ledger app never
imports notify. Without JavaScript the section links to the same view, a page of its own.
Its forms post with htmx and get the section back, with what happened in a notice that
takes the focus; without JavaScript they go back to the settings page with a message."""

from __future__ import annotations

from django import forms
from django.utils import timezone

from ledger.access import actor_label
from ledger.views.connections import (
    connection_removal,
    connection_save,
    connection_test,
    section_page,
)
from web.pages import SettingsSection

from .models import Webhook, WebhookPost
from .webhooks import send_test, shown_url, webhook_remove, webhook_set

LOG_LIMIT = 20


class _URLField(forms.URLField):
    """Read as a URL (https:// when no scheme is given); checked whole by ``webhook_set``,
    which names an address it refuses as resolved."""

    default_validators = []


class WebhookForm(forms.Form):
    url = _URLField(label="URL", max_length=2000, assume_scheme="https",
                    help_text="http:// or https://; the board posts each day's items here.")
    format = forms.ChoiceField(label="Format", choices=Webhook.Format.choices,
                               initial=Webhook.Format.SLACK)


def _context(suite, form) -> dict:
    webhook = Webhook.objects.filter(suite=suite).first()
    return {"webhook": webhook, "webhook_form": form or WebhookForm(
                initial={"url": webhook.url, "format": webhook.format} if webhook else None),
            "posts": list(WebhookPost.objects.filter(suite=suite)[:LOG_LIMIT])}


SECTION = SettingsSection("notify/webhook.html", "webhook", _context)


webhook = section_page(SECTION)


@connection_save(SECTION, WebhookForm, field="url")
def webhook_save(request, suite, data):
    saved, secret = webhook_set(suite=suite, url=data["url"], webhook_format=data["format"],
                                actor=actor_label(request.user))
    if secret is None:
        return f"Webhook saved: {shown_url(saved.url)} ({saved.get_format_display()})."
    # Shown in this response only, never again.
    return SECTION.render(request, suite, new_secret=secret)


webhook_delete = connection_removal(SECTION, webhook_remove, what="webhook")


@connection_test(SECTION, Webhook, what="webhook")
def webhook_test(request, webhook) -> tuple[bool, str]:
    posted = send_test(webhook, timezone.now().date(), actor=actor_label(request.user))
    if posted.ok:
        return True, f"Test delivery sent: HTTP {posted.response_code}."
    return False, f"Test delivery failed: {posted.error}."
