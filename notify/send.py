"""Sending a digest at most once a day per item: claim each item's delivery row, send what
was claimed, record how it went. A failure is logged and recorded, and never stops the
other digests; a failed item can be claimed again by a later run the same day."""

from __future__ import annotations

import logging
from enum import StrEnum

from django.conf import settings
from django.core.mail import EmailMessage, mailers
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from .digests import Digest, Item
from .models import Delivery
from .text import body, subject

logger = logging.getLogger("flakeboard.notify")
Status = Delivery.Status


class Outcome(StrEnum):
    SENT = "sent"
    FAILED = "failed"
    NOTHING_NEW = "nothing new"


def _fields(digest: Digest, item: Item, channel: str) -> dict:
    return {"channel": channel, "suite": digest.suite, "recipient": digest.recipient,
            "day": digest.today, "kind": item.kind, "key": item.key}


def undelivered(digest: Digest, channel: str = Delivery.Channel.EMAIL) -> Digest:
    """The digest without the items already sent (or being sent) to its recipient today."""
    taken = set(
        Delivery.objects.filter(
            channel=channel, suite=digest.suite, recipient=digest.recipient,
            day=digest.today, status__in=[Status.SENT, Status.SENDING],
        ).values_list("kind", "key")
    )
    return digest.keeping(lambda item: (item.kind, item.key) not in taken)


def _claim(digest: Digest, item: Item, now, channel: str) -> int | None:
    """The item's delivery row, claimed for this run; None when another run has it."""
    fields = _fields(digest, item, channel)
    try:
        with transaction.atomic():
            row = Delivery.objects.create(**fields, entry=item.entry, status=Status.SENDING,
                                          attempts=1, updated_at=now)
        return row.pk
    except IntegrityError:
        pk = Delivery.objects.filter(**fields).values_list("pk", flat=True).first()
        retried = Delivery.objects.filter(pk=pk, status=Status.FAILED).update(
            status=Status.SENDING, attempts=F("attempts") + 1, error="", updated_at=now)
        return pk if retried else None


def message(digest: Digest) -> EmailMessage:
    return EmailMessage(subject=subject(digest), body=body(digest),
                        from_email=settings.DEFAULT_FROM_EMAIL, to=[digest.recipient])


def claim(digest: Digest, channel: str = Delivery.Channel.EMAIL) -> dict[Item, int]:
    """The digest's items this run may send, each with its claimed delivery row."""
    now = timezone.now()
    claimed = {}
    for item in undelivered(digest, channel).items:
        if (pk := _claim(digest, item, now, channel)) is not None:
            claimed[item] = pk
    return claimed


def record(claimed: dict[Item, int], error: str = "") -> None:
    """How the claimed items' send went: sent, or failed (claimable again) with the error."""
    rows = Delivery.objects.filter(pk__in=claimed.values())
    if error:
        rows.update(status=Status.FAILED, error=error[:2000], updated_at=timezone.now())
    else:
        rows.update(status=Status.SENT, sent_at=timezone.now(), updated_at=timezone.now())


def send_digest(digest: Digest) -> Outcome:
    claimed = claim(digest)
    if not claimed:
        return Outcome.NOTHING_NEW
    try:
        mailers.default.send_messages([message(digest.keeping(lambda item: item in claimed))])
    except Exception as exc:  # any backend's failure: the other recipients still get theirs
        logger.warning("notify: the digest of %s to %s failed: %r",
                       digest.suite.slug, digest.recipient, exc)
        record(claimed, repr(exc))
        return Outcome.FAILED
    record(claimed)
    return Outcome.SENT
