"""Verdict batches (a gate's signal records, one batch per attempt) and each node's verdict
in them."""

from __future__ import annotations

from django.db import models

from flakeboard import rules
from flakeboard.rules.signatures import SIGNATURE_MAX_LENGTH
from ledger.models import Node, Suite

from .uploads import VERDICT_CHOICES, Upload, UploadRow, row_indexes, upload_keys


class VerdictBatch(Upload):
    """One uploaded list of signal records and its aggregate verdict."""

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="batches")
    patch = models.CharField(max_length=rules.META_MAX_LENGTH, blank=True)
    verdict = models.CharField(max_length=6, choices=VERDICT_CHOICES)
    record_count = models.PositiveIntegerField(default=0)
    reason_counts = models.JSONField(default=dict, blank=True)
    # The suite's fixture pin at upload (empty manifest: no pin).
    pin_manifest = models.CharField(max_length=rules.META_MAX_LENGTH, blank=True)
    pin_seed = models.BigIntegerField(null=True, blank=True)
    # The frozen nodes the client's gate left out of the run (--deselect-frozen).
    deselected_frozen = models.JSONField(default=list, blank=True)
    # The client's gate --diff: the patch's class and the added lines that made it.
    patch_class = models.CharField(
        max_length=6, blank=True, choices=[(c.value, c.value) for c in rules.PatchClass],
        help_text="How much the patch touches concurrency or time (empty: not said).",
    )
    risky_lines = models.PositiveIntegerField(
        null=True, blank=True,
        help_text="The patch's added source lines that touch concurrency or time.",
    )
    # The infrastructure rule, as a JUnit file's (``rules.attempt_infrastructure``).
    failing_share = models.FloatField(
        default=0.0,
        help_text="Of the nodes this attempt sent that ran (passed or failed), the share "
                  "that failed.",
    )
    infrastructure = models.BooleanField(
        default=False,
        help_text="More than the suite's infrastructure share of the nodes this attempt "
                  "ran failed, or every failure, at least 3, carried one signature: its "
                  "runner broke. Its failures count for the verdict, and are never flaky "
                  "evidence.",
    )
    infrastructure_signature = models.CharField(
        max_length=SIGNATURE_MAX_LENGTH, blank=True, default="", db_default="",
        help_text="The one failure signature that made this attempt an infrastructure "
                  "failure (empty: none did).",
    )

    class Meta(Upload.Meta):
        verbose_name_plural = "verdict batches"
        constraints, indexes = upload_keys("batch")
        indexes = [*indexes,
                   models.Index(fields=["suite", "commit", "patch", "-attempt"],
                                name="batch_suite_attempts")]

    def __str__(self):
        return f"batch {self.pk} ({self.verdict})"

    @property
    def infrastructure_why(self) -> str:
        """Why the attempt is an infrastructure failure, in words ("" when it is not)."""
        if not self.infrastructure:
            return ""
        if self.infrastructure_signature:
            return (f"every failure of this attempt carried one signature, "
                    f"\u201c{self.infrastructure_signature}\u201d")
        return (f"{self.failing_share:.0%} of the nodes this attempt ran failed, more than "
                f"the suite's infrastructure share")


class NodeVerdict(UploadRow):
    """One signal record, its effective signals and the arbiter's verdict."""

    batch = models.ForeignKey(VerdictBatch, on_delete=models.CASCADE, related_name="verdicts")
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="verdicts")
    position = models.PositiveIntegerField()
    property_check = models.CharField(max_length=8)
    fixture_lock = models.CharField(max_length=8)
    flake_status = models.CharField(max_length=8)
    # null is "no manifest", which the arbiter reads as fixture_missing
    fixture_manifest = models.CharField(max_length=rules.META_MAX_LENGTH, null=True, blank=True)  # noqa: DJ001
    seed = models.BigIntegerField(null=True, blank=True)
    freeze_expires = models.DateField(null=True, blank=True)
    stated_tier = models.PositiveSmallIntegerField(null=True, blank=True)
    failure_signature = models.CharField(
        max_length=SIGNATURE_MAX_LENGTH, blank=True, default="", db_default="",
        help_text="A failed record's failure signature, as the client's gate sent it.")
    effective_lock = models.CharField(max_length=8)
    effective_status = models.CharField(max_length=8)
    verdict = models.CharField(max_length=6, choices=VERDICT_CHOICES)
    # The verdict and the effective lock judge the node over every attempt at the batch's
    # patch and commit up to this one; ``attempts`` says which failed and passed.
    attempts = models.JSONField(
        null=True, blank=True,
        help_text="The node's attempts at this patch and commit: runs, failed_in, passed_in.",
    )
    flipped = models.BooleanField(
        default=False,
        help_text="The node failed in one attempt up to this one and passed in another: "
                  "flaky evidence.",
    )
    sent = models.BooleanField(
        default=True,
        help_text="False: the node was not in this upload; its record is its latest from an "
                  "earlier attempt, judged again with this one.",
    )

    class Meta(UploadRow.Meta):
        indexes = [
            *row_indexes("verdict", upload="batch"),
            # The flips the flaky-tests page and the targets file read (board.flips): a few
            # rows among every batch's, found without reading the others.
            models.Index(fields=["suite", "node"], condition=models.Q(flipped=True),
                         name="verdict_flipped"),
        ]

    def __str__(self):
        return f"{self.node_id}: {self.verdict} ({self.reason})"

    @property
    def merged(self) -> rules.NodeAttempts | None:
        """The node's attempts up to this batch (None for a row stored before they were kept)."""
        if self.attempts is None:
            return None
        return rules.NodeAttempts.from_answer(self.attempts, rules.FixtureLock(self.effective_lock))
