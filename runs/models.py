"""What CI uploaded: flake reports with their measurements, verdict batches with their
per-node verdicts, and the per-day reason-code rollups the charts read."""

from __future__ import annotations

from django.db import models

from flakeboard import rules
from flakeboard.rules.signatures import SIGNATURE_MAX_LENGTH
from ledger.models import KeyField, Node, QuarantineEntry, Suite, text_key

STATUS_CHOICES = [(s.value, s.value) for s in rules.GateStatus]
VERDICT_CHOICES = [(v.value, v.value) for v in rules.Verdict]
REASON_CHOICES = [(r.value, r.value) for r in rules.Reason]
ENTRY_STATE_CHOICES = [(s.value, s.value) for s in rules.EntryState]
# Each classification as the pages name it, and what it means (their tooltip).
CLASSIFICATION_TEXT = {
    rules.Classification.STABLE: ("Stable", "Never failed in any run."),
    rules.Classification.FLAKY: ("Flaky", "Mixed outcomes: passed in some runs, failed in "
                                          "others."),
    rules.Classification.BROKEN: ("Broken", "Failed every run, and also alone in a fresh "
                                            "process and after the tests before it, in its "
                                            "module and in the whole session."),
    rules.Classification.ORDER_DEPENDENT: (
        "Order-dependent", "Its outcome depends on the tests run before it: it needs state a "
                           "predecessor sets, or a predecessor pollutes it."),
    rules.Classification.REPEAT_UNSAFE: (
        "Repeat-unsafe", "Repeating it in one process changes its outcome, so it was "
                         "measured with a fresh process per run."),
}
CLASSIFICATION_CHOICES = [(c.value, label) for c, (label, _) in CLASSIFICATION_TEXT.items()]
# Each cause's role as the pages name it, and what the measured test does after its tests.
CAUSE_ROLE_TEXT = {
    rules.CauseRole.POLLUTER: ("polluter", "fails only after"),
    rules.CauseRole.STATE_SETTER: ("state-setter", "passes only after"),
}


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


class Report(Upload):
    """One uploaded flake-report.json and the report-level gate result."""

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="reports")
    branch = models.CharField(max_length=rules.META_MAX_LENGTH, blank=True)
    selected_total = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(max_length=4, choices=STATUS_CHOICES)
    quarantined = models.PositiveIntegerField(help_text="Entries counting toward the share.")
    test_set_size = models.PositiveIntegerField()
    share = models.FloatField()
    max_share = models.FloatField(help_text="The cap in force at upload.")
    size_source = models.CharField(
        max_length=20, blank=True, choices=[(s.value, s.value) for s in rules.SizeSource],
        help_text="Where the test set size came from.",
    )
    size_commit = models.CharField(
        max_length=rules.META_MAX_LENGTH, blank=True,
        help_text="The commit of CI's run that sized the test set (size source ci_run).",
    )
    over_cap = models.BooleanField(default=False)
    measurement_count = models.PositiveIntegerField(default=0)
    fail_count = models.PositiveIntegerField(default=0)
    warn_count = models.PositiveIntegerField(default=0)

    class Meta(Upload.Meta):
        constraints, indexes = upload_keys("report")
        indexes = [*indexes, models.Index(fields=["suite", "commit"], name="report_suite_commit")]

    def __str__(self):
        return f"report {self.pk} ({self.status})"

    @property
    def size_words(self) -> str:
        """The test set's size and what it counted (rules.size_words)."""
        return rules.size_words(self.test_set_size, self.size_source)


class Measurement(UploadRow):
    """One node's repeat run in a report, with the gate's outcome for it."""

    report = models.ForeignKey(Report, on_delete=models.CASCADE, related_name="measurements")
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="measurements")
    position = models.PositiveIntegerField(help_text="Row index in the uploaded report.")
    n = models.PositiveIntegerField()
    fails = models.PositiveIntegerField()
    upper95 = models.FloatField(help_text="The server's Wilson bound.")
    reported_upper95 = models.FloatField(null=True, blank=True)
    seed_base = models.BigIntegerField(null=True, blank=True)
    stated_tier = models.PositiveSmallIntegerField(
        null=True, blank=True,
        help_text="The tier the row stated for its node: kept, flagged tier_disagrees where "
                  "the tier rules give another, never deciding (null: not said).",
    )
    classification = models.CharField(
        max_length=20, blank=True, choices=CLASSIFICATION_CHOICES,
        help_text="What the client's measure command found the test to be (empty: not said).",
    )
    status = models.CharField(max_length=4, choices=STATUS_CHOICES)
    pooled = models.JSONField(
        null=True, blank=True,
        help_text="The node's counts pooled with the earlier reports at the commit, which the "
                  "gate judged: n, fails and the earlier reports' ids (null: none earlier).",
    )
    cause = models.JSONField(
        null=True, blank=True,
        help_text="For an order_dependent test, the tests the client's measure command found "
                  "it depends on: role (polluter or state_setter), nodes, complete.",
    )
    experiments = models.JSONField(
        null=True, blank=True,
        help_text="The client's diagnosis experiments on the node (docs/diagnosis.md): "
                  "seeded (seed replay), load (runs under CPU load), skipped (null: none "
                  "ran or none said).",
    )

    class Meta(UploadRow.Meta):
        indexes = row_indexes("measurement", upload="report")

    def __str__(self):
        return f"{self.node_id}: {self.fails}/{self.n} {self.status}"

    @property
    def pooled_upper95(self) -> float | None:
        """The Wilson bound of the node's pooled counts at the commit (None: not pooled)."""
        return None if not self.pooled else rules.upper95(self.pooled["fails"], self.pooled["n"])

    @property
    def cause_words(self) -> dict | None:
        """The cause as the pages say it: "fails only after" (or "passes only after", "...
        some of" when the bisection stopped early), each test with its page's key, and
        the role ("polluter", "state-setters together"); None without one."""
        if not self.cause:
            return None
        nodes = self.cause["nodes"]
        role, verb = CAUSE_ROLE_TEXT[rules.CauseRole(self.cause["role"])]
        # One test that flips it is the cause, wherever the bisection stopped.
        among = not self.cause.get("complete", True) and len(nodes) > 1
        if len(nodes) > 1:
            role = f"{role}s among them" if among else f"{role}s together"
        return {"verb": f"{verb} some of" if among else verb,
                "nodes": [{"nodeid": nodeid, "key": text_key(nodeid)} for nodeid in nodes],
                "role": role}

    @property
    def cause_sentence(self) -> str:
        """The cause in words: "fails only after tests/a.py::test_p" ("" without one)."""
        words = self.cause_words
        if not words:
            return ""
        return f"{words['verb']} {', '.join(node['nodeid'] for node in words['nodes'])}"

    def diagnosis_facts(self) -> rules.MeasuredFacts:
        """What the diagnosis reads of this measurement (SPEC 2.4d): its classification,
        its cause in words, and its experiments. Also of one not stored."""
        return rules.MeasuredFacts(
            classification=self.classification or None, cause=self.cause_sentence or None,
            experiments=rules.Experiments.from_wire(self.experiments))

    @property
    def classification_help(self) -> str:
        """What the classification means, in a sentence ("" without one)."""
        if not self.classification:
            return ""
        return CLASSIFICATION_TEXT[rules.Classification(self.classification)][1]


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


class ImpactMap(models.Model):
    """A suite's impact map (SPEC 2.4c): which source files each test executed, recorded by
    one gate run (``gate --record-impact``) and replacing the one before; its rows are
    ImpactPath."""

    suite = models.OneToOneField(Suite, on_delete=models.CASCADE, related_name="impact_map")
    commit = models.CharField(max_length=rules.META_MAX_LENGTH, blank=True)
    recorded_at = models.DateTimeField()
    nodes = models.PositiveIntegerField(help_text="How many tests the map holds.")
    paths = models.PositiveIntegerField(help_text="How many distinct source files it names.")

    def __str__(self):
        return f"{self.suite_id} at {self.commit or '-'}: {self.nodes} tests"


class ImpactPath(models.Model):
    """One source file one test executed, in its suite's impact map. Asked by path (the
    key of a path, since a path may be longer than a b-tree entry holds)."""

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="+")
    node = models.CharField(max_length=rules.NODEID_MAX_LENGTH)
    path = models.CharField(max_length=rules.IMPACT_PATH_MAX_LENGTH)
    path_key = KeyField(source="path")

    class Meta:
        indexes = [models.Index(fields=["suite", "path_key"], name="impact_suite_path")]

    def __str__(self):
        return f"{self.node} runs {self.path}"
