"""What the owners were told, and when: one row per event, recipient and day; and each
suite's webhook with the log of what was posted to it."""

from __future__ import annotations

from django.db import models

from flakeboard import rules
from ledger.models import QuarantineEntry, Suite


class Delivery(models.Model):
    """One item of one digest to one recipient on one day. The unique constraint is the
    promise that an event is delivered at most once a day: a run claims the row before it
    sends, so a second run the same day (or one beside it) finds it taken. A failed send
    stays claimable, so a later run that day tries again."""

    class Kind(models.TextChoices):
        EXPIRING = (rules.EntryState.EXPIRING.value,
                    f"Expiring within {rules.EXPIRING_WITHIN_DAYS} days")
        EXPIRED = rules.EntryState.EXPIRED.value, "Expired: the gate is failing"
        TIER_VIOLATION = rules.EntryState.TIER_VIOLATION.value, "Tier violation"
        READY_TO_CLEAR = "ready_to_clear", "Ready to clear"

    class Status(models.TextChoices):
        SENDING = "sending", "Sending"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    class Channel(models.TextChoices):
        EMAIL = "email", "E-mail"
        WEBHOOK = "webhook", "Webhook"

    channel = models.CharField(max_length=10, choices=Channel.choices, default=Channel.EMAIL)
    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="deliveries")
    recipient = models.CharField(max_length=254)
    day = models.DateField()
    kind = models.CharField(max_length=20, choices=Kind.choices)
    # The event's key: which entry the item is about ("entry:<pk>").
    key = models.CharField(max_length=64)
    entry = models.ForeignKey(
        QuarantineEntry, on_delete=models.SET_NULL, null=True, blank=True,
        related_name="deliveries",
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.SENDING)
    attempts = models.PositiveIntegerField(default=0)
    sent_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    updated_at = models.DateTimeField()

    class Meta:
        verbose_name_plural = "deliveries"
        ordering = ["-day", "suite", "recipient", "kind", "key"]
        constraints = [
            models.UniqueConstraint(
                fields=["channel", "suite", "recipient", "day", "kind", "key"],
                name="one_delivery_per_event_recipient_day",
            )
        ]

    def __str__(self):
        return f"{self.kind} {self.key} to {self.recipient} on {self.day} ({self.status})"


class Webhook(models.Model):
    """A suite's webhook: where its daily items are posted, in which format, and the
    signing secret. The secret is kept as it is (the board needs it to sign each body with
    HMAC-SHA256); it is shown once, when it is made, and never again."""

    class Format(models.TextChoices):
        SLACK = "slack", "Slack-compatible"
        JSON = "json", "Generic JSON"

    suite = models.OneToOneField(Suite, on_delete=models.CASCADE, related_name="webhook")
    url = models.URLField(max_length=2000)
    format = models.CharField(max_length=10, choices=Format.choices, default=Format.SLACK)
    secret = models.CharField(max_length=100, editable=False)
    created_at = models.DateTimeField()
    created_by = models.CharField(max_length=200, blank=True)

    def __str__(self):
        return f"{self.suite.slug} → {self.url} ({self.format})"


class WebhookPost(models.Model):
    """One POST to a suite's webhook (its retries included): the delivery log."""

    class Status(models.TextChoices):
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    id = models.UUIDField(primary_key=True)  # the X-Flakeboard-Delivery header
    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="webhook_posts")
    url = models.URLField(max_length=2000)
    at = models.DateTimeField()
    test = models.BooleanField(default=False)
    items = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=10, choices=Status.choices)
    attempts = models.PositiveIntegerField(default=0)
    response_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-at"]
        indexes = [models.Index(fields=["suite", "-at"], name="webhook_post_suite_at")]

    def __str__(self):
        return f"{self.id} to {self.url} at {self.at:%Y-%m-%d %H:%M} ({self.status})"
