"""Flake reports (what the budget script and the client's measure command upload) and their
measurements, each classified and explained."""

from __future__ import annotations

from django.db import models

from flakeboard import rules
from ledger.models import Node, Suite, text_key

from .uploads import STATUS_CHOICES, Upload, UploadRow, row_indexes, upload_keys

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
