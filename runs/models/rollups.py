"""The per-day reason-code counts the charts read."""

from __future__ import annotations

from django.db import models

from ledger.models import Suite

from .uploads import REASON_CHOICES


class ReasonRollup(models.Model):
    """Reason-code counts per suite, day and source, kept current in the ingest transaction.

    Per-node reasons are counted, plus one for an upload whose own reason is a
    report- or batch-level code (no_evidence, quarantine_cap_exceeded).
    """

    class Source(models.TextChoices):
        VERDICTS = "verdicts", "Verdict batches"
        REPORTS = "reports", "Flake reports"

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    source = models.CharField(max_length=8, choices=Source.choices)
    reason = models.CharField(max_length=40, choices=REASON_CHOICES)
    count = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["suite", "source", "day", "reason"], name="one_rollup_per_key"
            )
        ]

    def __str__(self):
        return f"{self.suite_id} {self.day} {self.source} {self.reason}={self.count}"
