"""The settings page's Webhook section, for leads: the settings page includes it
(templates/notify/_webhook_section.html) and loads it from here, so the ledger app never
imports notify. Without JavaScript the section links to the same view, a page of its own.
Its forms post with htmx and get the section back, with what happened in a notice that
takes the focus; without JavaScript they go back to the settings page with a message."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache

from ledger.access import actor_label, for_leads
from web.pages import render_page, wants_partial

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


def _section(request, suite, **extra):
    webhook = Webhook.objects.filter(suite=suite).first()
    form = extra.pop("form", None) or WebhookForm(
        initial={"url": webhook.url, "format": webhook.format} if webhook else None)
    context = {
        "suite": suite, "nav": "settings", "webhook": webhook, "webhook_form": form,
        "posts": list(WebhookPost.objects.filter(suite=suite)[:LOG_LIMIT]), **extra,
    }
    return render_page(request, "notify/webhook.html", context, partial="section")


def _done(request, suite, text: str, *, ok: bool = True):
    """What a lead's action did: in the section swapped in (htmx), or as a message on the
    settings page."""
    if wants_partial(request):
        return _section(request, suite, notice=text, notice_ok=ok)
    (messages.success if ok else messages.error)(request, text)
    return redirect(reverse("settings", args=[suite.slug]) + "#webhook")


@for_leads("GET")
def webhook(request, suite):
    return _section(request, suite)


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
                return _done(request, suite, f"Webhook saved: {shown_url(saved.url)} "
                                             f"({saved.get_format_display()}).")
            # Shown in this response only, never again.
            return _section(request, suite, new_secret=secret)
    return _section(request, suite, form=form)


@for_leads("POST")
def webhook_delete(request, suite):
    removed = webhook_remove(suite=suite, actor=actor_label(request.user))
    return _done(request, suite, "Webhook removed." if removed else "No webhook to remove.")


@for_leads("POST")
def webhook_test(request, suite):
    webhook = Webhook.objects.filter(suite=suite).select_related("suite").first()
    if webhook is None:
        return _done(request, suite, "Set a webhook first.", ok=False)
    posted = send_test(webhook, timezone.now().date(), actor=actor_label(request.user))
    if posted.ok:
        return _done(request, suite, f"Test delivery sent: HTTP {posted.response_code}.")
    return _done(request, suite, f"Test delivery failed: {posted.error}.", ok=False)
