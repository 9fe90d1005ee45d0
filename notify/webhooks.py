"""A suite's webhook: set, replaced or removed by a lead (audited, the secret never in the
event), and each day's items posted to it, signed, at most once a day per item, with a log
of every POST."""

from __future__ import annotations

import logging
import secrets
import time
import uuid
from datetime import date
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from django.utils import timezone

from ledger.audit import record_event
from ledger.locks import lock_suite
from ledger.models import AuditEvent, Suite
from ledger.settings_services import connection_remove
from web.outbound import Answer as Posted
from web.outbound import Refused, check_url, post, with_retries

from . import payloads
from .digests import Digest, suite_items
from .models import Delivery, Webhook, WebhookPost
from .send import Outcome, claim, record, undelivered

logger = logging.getLogger("flakeboard.notify")
_validate_url = URLValidator(schemes=["http", "https"],
                             message="A webhook URL starts with http:// or https://.")


def shown_url(url: str) -> str:
    """The URL without its path and query, which often hold a token (Slack's do): what the
    audit trail and the log say."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/…"


def _shown(webhook: Webhook) -> dict:
    """The webhook as the audit trail holds it: never its secret, nor its URL's path."""
    return {"webhook": shown_url(webhook.url), "format": webhook.format}


def _checked_url(url: str) -> str:
    """The URL, if the board would post to it: the delivery's own guard first, so that an
    address in any spelling (2130706433, 0x7f000001, [::ffff:127.0.0.1]) is refused naming
    it as resolved; a host that does not resolve now is checked again at each delivery."""
    try:
        check_url(url, unresolved_ok=True)
    except Refused as exc:
        raise ValidationError(f"Not saved: {exc}.", code="refused") from None
    _validate_url(url)
    return url


def webhook_set(*, suite: Suite, url: str, webhook_format: str, actor: str
                ) -> tuple[Webhook, str | None]:
    """Set the suite's webhook, or replace its URL and format. A new webhook gets a new
    signing secret, answered here only (None when replacing: the secret is kept)."""
    url = _checked_url(url.strip())
    webhook_format = Webhook.Format(webhook_format)
    with transaction.atomic():
        lock_suite(suite.pk)
        webhook = Webhook.objects.filter(suite=suite).first()
        before = _shown(webhook) if webhook else {}
        secret = None
        if webhook is None:
            secret = secrets.token_urlsafe(32)
            webhook = Webhook(suite=suite, secret=secret, created_at=timezone.now(),
                              created_by=actor)
        webhook.url, webhook.format = url, webhook_format
        webhook.save()
        record_event(suite=suite, action=AuditEvent.Action.SETTINGS, actor=actor,
                     before=before, after=_shown(webhook),
                     note="webhook replaced" if before else "webhook set")
    return webhook, secret


def webhook_remove(*, suite: Suite, actor: str) -> bool:
    return connection_remove(suite=suite, model=Webhook, actor=actor, shown=_shown,
                             note="webhook removed")


def _post_with_retries(url: str, body: bytes, headers: dict, sleep) -> Posted:
    return with_retries(lambda: (post(url, body, headers), b""), sleep)


def _deliver(webhook: Webhook, content: dict, *, test: bool, sleep) -> Posted:
    """POST the content, signed, and log it."""
    delivery = uuid.uuid4()
    raw = payloads.body(webhook.format, content)
    headers = {"Content-Type": "application/json",
               payloads.SIGNATURE_HEADER: payloads.signature(webhook.secret, raw),
               payloads.DELIVERY_HEADER: str(delivery)}
    posted = _post_with_retries(webhook.url, raw, headers, sleep)
    WebhookPost.objects.create(
        id=delivery, suite=webhook.suite, url=webhook.url, at=timezone.now(), test=test,
        items=len(content["items"]), attempts=posted.attempts,
        status=WebhookPost.Status.SENT if posted.ok else WebhookPost.Status.FAILED,
        response_code=posted.response_code, error=posted.error[:2000],
    )
    if not posted.ok:
        logger.warning("notify: the webhook of %s (%s) failed after %d attempts: %s",
                       webhook.suite.slug, shown_url(webhook.url), posted.attempts,
                       posted.error)
    return posted


def _webhook_digest(suite: Suite, today: date, skip=frozenset()
                    ) -> tuple[Webhook, Digest] | None:
    """The suite's webhook and its entries' items today, the webhook as their recipient
    (a token's expiry is for the leads' e-mail only)."""
    webhook = Webhook.objects.filter(suite=suite).select_related("suite").first()
    if webhook is None:
        return None
    return webhook, Digest(suite, f"webhook:{webhook.pk}", today,
                           own=suite_items(suite, today, skip))


def webhook_due(suite: Suite, today: date, skip=frozenset()) -> int | None:
    """How many items the next POST would carry (for a dry run, ``skip`` naming the entries
    it would auto-clear); None without a webhook."""
    if (found := _webhook_digest(suite, today, skip)) is None:
        return None
    return len(undelivered(found[1], Delivery.Channel.WEBHOOK).items)


def send_webhook(suite: Suite, today: date, *, sleep=time.sleep) -> Outcome | None:
    """Post today's items not yet delivered to the suite's webhook; None without one."""
    if (found := _webhook_digest(suite, today)) is None:
        return None
    webhook, digest = found
    claimed = claim(digest, Delivery.Channel.WEBHOOK)
    if not claimed:
        return Outcome.NOTHING_NEW
    content = payloads.data(digest.keeping(lambda item: item in claimed))
    posted = _deliver(webhook, content, test=False, sleep=sleep)
    record(claimed, "" if posted.ok else posted.error or "failed")
    return Outcome.SENT if posted.ok else Outcome.FAILED


def send_test(webhook: Webhook, today: date, *, actor: str, sleep=time.sleep) -> Posted:
    """A sample POST: logged and audited (a lead made the board call out), and no item
    counted as delivered."""
    posted = _deliver(webhook, payloads.sample(webhook.suite, today), test=True, sleep=sleep)
    outcome = f"HTTP {posted.response_code}" if posted.ok else f"failed: {posted.error}"
    record_event(suite=webhook.suite, action=AuditEvent.Action.SETTINGS, actor=actor,
                 note=f"webhook test sent to {shown_url(webhook.url)} ({outcome})"[:500])
    return posted
