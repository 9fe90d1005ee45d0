"""What a flake report and a verdict batch share, and their rows: what the gate's answer
was judged against, the body stored once by its digest, each row's reason and entry, the
keys and indexes of both kinds, and the choices of their closed vocabularies."""

from __future__ import annotations

from django.db import models

from flakeboard import rules
from ledger.models import QuarantineEntry, Suite

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


class Upload(JudgedAgainst):
    """What a flake report and a verdict batch both keep: the body (stored once per suite,
    by its digest), who sent it when and about which commit, and the gate's answer."""

    created_at = models.DateTimeField(db_index=True)
    day = models.DateField()
    commit = models.CharField(max_length=rules.META_MAX_LENGTH, blank=True)
    evidence = models.CharField(max_length=rules.EVIDENCE_MAX_LENGTH, blank=True)
    uploaded_by = models.CharField(max_length=200)
    digest = models.CharField(max_length=64)
    reason = models.CharField(max_length=40, choices=REASON_CHOICES)
    exit_code = models.PositiveSmallIntegerField()
    attempt = models.PositiveIntegerField(
        default=1,
        help_text="Which upload at its commit (and a batch's patch) this is, from 1: its "
                  "answer judges the evidence of every one up to it.",
    )

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]


class UploadRow(models.Model):
    """What a report's measurement and a batch's per-node verdict both keep: the row's
    reason and flags, and the quarantine entry the node held at upload, in its state then."""

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField()
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
        abstract = True
        ordering = ["position"]  # each row class declares its position, with its own help


def upload_keys(prefix: str) -> tuple[list, list]:
    """An upload's constraint and index: a body is stored once per suite (what makes a
    retried upload safe), and a suite's uploads are listed newest first. ``prefix`` keeps
    the names the migrations gave them."""
    return (
        [models.UniqueConstraint(fields=["suite", "digest"], name=f"{prefix}_once_per_digest")],
        [models.Index(fields=["suite", "-created_at"], name=f"{prefix}_suite_recent")],
    )


def row_indexes(prefix: str, *, upload: str) -> list:
    """A row's indexes: an upload's rows in order, and a node's rows newest first."""
    return [
        models.Index(fields=[upload, "position"], name=f"{prefix}_{upload}_pos"),
        models.Index(fields=["node", "-created_at"], name=f"{prefix}_node_recent"),
    ]
