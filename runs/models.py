"""What CI uploaded: flake reports with their measurements, verdict batches with their
per-node verdicts, and the per-day reason-code rollups the charts read."""

from __future__ import annotations

from django.db import models

from flakeboard import rules
from ledger.models import Node, QuarantineEntry, Suite

STATUS_CHOICES = [(s.value, s.value) for s in rules.GateStatus]
VERDICT_CHOICES = [(v.value, v.value) for v in rules.Verdict]
REASON_CHOICES = [(r.value, r.value) for r in rules.Reason]
ENTRY_STATE_CHOICES = [(s.value, s.value) for s in rules.EntryState]


class JudgedAgainst(models.Model):
    """What a gate answer was judged against, stored with it so that it can be explained
    later, whatever the suite's ledger and policy have become since."""

    ledger_revision = models.PositiveBigIntegerField(null=True, blank=True)
    policy = models.JSONField(default=dict, blank=True, help_text="The policy's numbers.")
    policy_hash = models.CharField(max_length=16, blank=True)

    class Meta:
        abstract = True

    def judge(self, suite: Suite) -> None:
        policy = suite.policy
        self.ledger_revision = suite.ledger_revision
        self.policy = rules.policy_numbers(policy)
        self.policy_hash = rules.policy_hash(policy)

    @property
    def judged_policy(self) -> rules.Policy | None:
        """The policy in force at upload (None for an upload stored before it was kept)."""
        return rules.Policy(**self.policy) if self.policy else None


class Report(JudgedAgainst):
    """One uploaded flake-report.json and the report-level gate result."""

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="reports")
    created_at = models.DateTimeField(db_index=True)
    day = models.DateField()
    commit = models.CharField(max_length=rules.META_MAX_LENGTH, blank=True)
    branch = models.CharField(max_length=rules.META_MAX_LENGTH, blank=True)
    evidence = models.CharField(max_length=rules.EVIDENCE_MAX_LENGTH, blank=True)
    selected_total = models.PositiveIntegerField(null=True, blank=True)
    uploaded_by = models.CharField(max_length=200)
    digest = models.CharField(max_length=64)
    status = models.CharField(max_length=4, choices=STATUS_CHOICES)
    reason = models.CharField(max_length=40, choices=REASON_CHOICES)
    exit_code = models.PositiveSmallIntegerField()
    quarantined = models.PositiveIntegerField(help_text="Entries counting toward the share.")
    test_set_size = models.PositiveIntegerField()
    share = models.FloatField()
    max_share = models.FloatField(help_text="The cap in force at upload.")
    size_source = models.CharField(
        max_length=20, blank=True, choices=[(s.value, s.value) for s in rules.SizeSource],
        help_text="Where the test set size came from.",
    )
    cap_exceeded = models.BooleanField(default=False)
    measurement_count = models.PositiveIntegerField(default=0)
    fail_count = models.PositiveIntegerField(default=0)
    warn_count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["suite", "digest"], name="report_once_per_digest")
        ]
        indexes = [models.Index(fields=["suite", "-created_at"], name="report_suite_recent")]

    def __str__(self):
        return f"report {self.pk} ({self.status})"


class Measurement(models.Model):
    """One node's repeat run in a report, with the gate's outcome for it."""

    report = models.ForeignKey(Report, on_delete=models.CASCADE, related_name="measurements")
    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="+")
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="measurements")
    position = models.PositiveIntegerField(help_text="Row index in the uploaded report.")
    created_at = models.DateTimeField()
    n = models.PositiveIntegerField()
    fails = models.PositiveIntegerField()
    upper95 = models.FloatField(help_text="The server's Wilson bound.")
    reported_upper95 = models.FloatField(null=True, blank=True)
    seed_base = models.BigIntegerField(null=True, blank=True)
    status = models.CharField(max_length=4, choices=STATUS_CHOICES)
    reason = models.CharField(max_length=40, choices=REASON_CHOICES)
    flags = models.JSONField(default=list, blank=True)
    entry = models.ForeignKey(
        QuarantineEntry, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    entry_state = models.CharField(
        max_length=20, blank=True, choices=ENTRY_STATE_CHOICES,
        help_text="The entry's state at upload.",
    )

    class Meta:
        ordering = ["position"]
        indexes = [
            models.Index(fields=["report", "position"], name="measurement_report_pos"),
            models.Index(fields=["node", "-created_at"], name="measurement_node_recent"),
        ]

    def __str__(self):
        return f"{self.node_id}: {self.fails}/{self.n} {self.status}"


class VerdictBatch(JudgedAgainst):
    """One uploaded list of signal records and its aggregate verdict."""

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="batches")
    created_at = models.DateTimeField(db_index=True)
    day = models.DateField()
    patch = models.CharField(max_length=rules.META_MAX_LENGTH, blank=True)
    commit = models.CharField(max_length=rules.META_MAX_LENGTH, blank=True)
    evidence = models.CharField(max_length=rules.EVIDENCE_MAX_LENGTH, blank=True)
    uploaded_by = models.CharField(max_length=200)
    digest = models.CharField(max_length=64)
    verdict = models.CharField(max_length=6, choices=VERDICT_CHOICES)
    reason = models.CharField(max_length=40, choices=REASON_CHOICES)
    exit_code = models.PositiveSmallIntegerField()
    record_count = models.PositiveIntegerField(default=0)
    reason_counts = models.JSONField(default=dict, blank=True)
    # The suite's fixture pin at upload (empty manifest: no pin).
    pin_manifest = models.CharField(max_length=rules.META_MAX_LENGTH, blank=True)
    pin_seed = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "verdict batches"
        constraints = [
            models.UniqueConstraint(fields=["suite", "digest"], name="batch_once_per_digest")
        ]
        indexes = [models.Index(fields=["suite", "-created_at"], name="batch_suite_recent")]

    def __str__(self):
        return f"batch {self.pk} ({self.verdict})"


class NodeVerdict(models.Model):
    """One signal record, its effective signals and the arbiter's verdict."""

    batch = models.ForeignKey(VerdictBatch, on_delete=models.CASCADE, related_name="verdicts")
    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="+")
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="verdicts")
    position = models.PositiveIntegerField()
    created_at = models.DateTimeField()
    property_check = models.CharField(max_length=8)
    fixture_lock = models.CharField(max_length=8)
    flake_status = models.CharField(max_length=8)
    # null is "no manifest", which the arbiter reads as fixture_missing
    fixture_manifest = models.CharField(max_length=rules.META_MAX_LENGTH, null=True, blank=True)  # noqa: DJ001
    seed = models.BigIntegerField(null=True, blank=True)
    freeze_expires = models.DateField(null=True, blank=True)
    stated_tier = models.PositiveSmallIntegerField(null=True, blank=True)
    effective_lock = models.CharField(max_length=8)
    effective_status = models.CharField(max_length=8)
    verdict = models.CharField(max_length=6, choices=VERDICT_CHOICES)
    reason = models.CharField(max_length=40, choices=REASON_CHOICES)
    flags = models.JSONField(default=list, blank=True)
    entry = models.ForeignKey(
        QuarantineEntry, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    entry_state = models.CharField(
        max_length=20, blank=True, choices=ENTRY_STATE_CHOICES,
        help_text="The entry's state at upload.",
    )

    class Meta:
        ordering = ["position"]
        indexes = [
            models.Index(fields=["batch", "position"], name="verdict_batch_pos"),
            models.Index(fields=["node", "-created_at"], name="verdict_node_recent"),
        ]

    def __str__(self):
        return f"{self.node_id}: {self.verdict} ({self.reason})"


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
