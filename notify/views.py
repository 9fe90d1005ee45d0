"""The settings page's Webhook section, for leads: the settings page includes it
(templates/notify/_webhook_section.html) and loads it from here, so the ledger app never
imports notify. Without JavaScript the section links to the same view, a page of its own.
Its forms post with htmx and get the section back, with what happened in a notice that
takes the focus; without JavaScript they go back to the settings page with a message."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.utils import timezone
from django.views.decorators.cache import never_cache

from ledger.access import actor_label, for_leads
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


@for_leads("GET")
def webhook(request, suite):
    return SECTION.render(request, suite)


@for_leads("POST")
@never_cache
def webhook_save(request, suite):
    form = WebhookForm(request.POST)
    if form.is_valid():
        try:
            saved, secret = webhook_set(suite=suite, url=form.cleaned_data["url"],
                                        webhook_format=form.cleaned_data["format"],
                                        actor=actor_label(request.user))
        except ValidationError as exc:
            form.add_error("url", exc)
        else:
            if secret is None:
                return SECTION.done(request, suite, f"Webhook saved: {shown_url(saved.url)} "
                                        f"({saved.get_format_display()}).")
            # Shown in this response only, never again.
            return SECTION.render(request, suite, new_secret=secret)
    return SECTION.render(request, suite, form=form)


@for_leads("POST")
def webhook_delete(request, suite):
    removed = webhook_remove(suite=suite, actor=actor_label(request.user))
    return SECTION.done(request, suite, "Webhook removed." if removed else "No webhook to remove.")


@for_leads("POST")
def webhook_test(request, suite):
    webhook = Webhook.objects.filter(suite=suite).select_related("suite").first()
    if webhook is None:
        return SECTION.done(request, suite, "Set a webhook first.", ok=False)
    posted = send_test(webhook, timezone.now().date(), actor=actor_label(request.user))
    if posted.ok:
        return SECTION.done(request, suite, f"Test delivery sent: HTTP {posted.response_code}.")
    return SECTION.done(request, suite, f"Test delivery failed: {posted.error}.", ok=False)
