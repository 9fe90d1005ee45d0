"""What the owners were told, and when: one row per event, recipient and day."""

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
        EXPIRING = rules.EntryState.EXPIRING.value, "Expiring within 7 days"
        EXPIRED = rules.EntryState.EXPIRED.value, "Expired: the gate is failing"
        TIER_VIOLATION = rules.EntryState.TIER_VIOLATION.value, "Tier violation"
        READY_TO_CLEAR = "ready_to_clear", "Ready to clear"

    class Status(models.TextChoices):
        SENDING = "sending", "Sending"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    class Channel(models.TextChoices):
        EMAIL = "email", "E-mail"

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
