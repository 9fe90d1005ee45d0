"""Passive evidence from JUnit XML: each file uploaded, each test's result in it (the raw
rows, kept JUNIT_RETENTION_DAYS), and the rollups that detection and the flaky-tests
page read, so that neither's cost grows with history.

- ``CaseResult``: each test's result in each file, its attempts merged, and the flaky
  failures the file added to its job's. Detection reads a job's counts from them too (the
  results of the commit's files of that job), so a job keeps no counts of its own.
- ``NodeDay``: per node, day and branch, the runs, failures and flaky failures, and the
  commits the node became flaky on: the page's ranking, rate, first and last seen, read
  over a window of days. Kept.
- ``SignatureDay``: per node, day, branch and failure signature, the failures: the page's
  top signatures. Kept.

None of these is part of the gate. A file flagged ``infrastructure`` keeps its raw rows
and adds nothing to the rollups.
"""

from __future__ import annotations

from django.db import models

from flakeboard import rules as gate_rules
from flakeboard.rules.signatures import MESSAGE_MAX_LENGTH, SIGNATURE_MAX_LENGTH
from ledger.models import Node, Suite

from .rules import Outcome, Producer

META = gate_rules.META_MAX_LENGTH


class RealField(models.FloatField):
    """A float in 4 bytes (``real``) on both databases: about 7 significant digits, enough
    for a duration in seconds; SQLite's ``real`` is 8 bytes all the same."""

    def db_type(self, connection):
        return "real"


class JUnitFile(models.Model):
    """One uploaded JUnit XML file, its counts and what detection found on upload."""

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="junit_files")
    created_at = models.DateTimeField()
    day = models.DateField()
    commit = models.CharField(max_length=META)
    branch = models.CharField(max_length=META, blank=True)
    job = models.CharField(max_length=META, blank=True)
    attempt = models.PositiveIntegerField(default=1)
    uploaded_by = models.CharField(max_length=200)
    digest = models.CharField(max_length=64)
    producer = models.CharField(max_length=10, choices=[(p.value, p.value) for p in Producer])
    # Tests by their last attempt, as pytest counts them, and the attempts beyond the first.
    testcases = models.PositiveIntegerField(default=0)
    passed = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    error = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    reruns = models.PositiveIntegerField(default=0)
    flaky_in_file = models.PositiveIntegerField(
        default=0, help_text="Tests that both passed and failed within this file.")
    failing_share = models.FloatField(default=0.0, help_text="Of the tests that ran.")
    infrastructure_share = models.FloatField(help_text="The suite's share at upload.")
    infrastructure_reason = models.CharField(
        max_length=30, blank=True,
        choices=[(r.value, r.value) for r in gate_rules.InfrastructureReason],
        help_text="Set when the file is an infrastructure failure, left out of detection.",
    )
    # Stated the default branch, unvouched, on a suite that trusts only a default-branch
    # token's files to size the test set: evidence, never sizing it (``rules.trust``).
    test_set_untrusted = models.BooleanField(
        default=False,
        help_text="Stated the default branch with a token not kept for it: stored as "
                  "evidence, left out of the test set.")
    # Found on upload, kept for the answer to a duplicate: node ids, in file order.
    newly_flaky = models.JSONField(default=list, blank=True)
    differs_by_job = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["suite", "digest"], name="junit_once_per_digest")
        ]
        indexes = [
            models.Index(fields=["suite", "-created_at"], name="junit_suite_recent"),
            models.Index(fields=["suite", "commit"], name="junit_suite_commit"),
            models.Index(fields=["day"], name="junit_day"),  # pruning
        ]

    def __str__(self):
        return f"junit {self.pk} ({self.commit[:12]} {self.job or '-'} #{self.attempt})"

    @property
    def infrastructure(self) -> bool:
        return bool(self.infrastructure_reason)


class NodeResultsIndex(models.Index):
    """A test's results by day. On PostgreSQL ``(node, day DESC)``: each day is a
    partition of its own, so an upload adds to its day's index alone. On SQLite, one table,
    ``(day, node)``: an upload's entries go to one place, its day's, where by node they went
    to one place a test of an index of every result, most of its pages dirtied (and carried
    by the WAL) at every upload. There a test's results are read with their days
    (``node_results``), each day's found by node."""

    def create_sql(self, model, schema_editor, using="", **kwargs):
        if schema_editor.connection.vendor != "sqlite":
            return super().create_sql(model, schema_editor, using, **kwargs)
        by_day = models.Index(fields=["day", "node"], name=self.name)
        return by_day.create_sql(model, schema_editor, using, **kwargs)


def node_results(suite_id: int, **filters):
    """The results ``filters`` pick of the suite's tests (``node_id=…`` or
    ``node_id__in=…``), on the days of the suite's files: on SQLite their index leads with
    the day (``NodeResultsIndex``); on PostgreSQL the days are a semi-join after each
    partition's index of its tests."""
    days = JUnitFile.objects.filter(suite_id=suite_id).values("day")
    return CaseResult.objects.filter(day__in=days, **filters).order_by()


def cascade_by_day(collector, field, sub_objs, using):
    """``CASCADE`` for a node's results, read on the days of the files there are
    (``NodeResultsIndex``)."""
    days = JUnitFile.objects.using(using).values("day")
    models.CASCADE(collector, field, sub_objs.filter(day__in=days), using)


class CaseResult(models.Model):
    """One test in one file, its attempts merged (``junit.rules.merge_attempts``). A raw row,
    written by an upload (tens of thousands a file) and deleted by the prune. On PostgreSQL
    the table is partitioned by ``day``, its file's day (``junit.partitions``).

    Its keys have no foreign key in the database: PostgreSQL checks each at the commit, a
    query and a row lock on the parent a key, which cost an upload more than writing the
    rows. The upload writes them under its suite's lock, beside its file (whose own foreign
    key refuses a suite deleted meanwhile), and their node and file go only through
    Django's delete, whose ``CASCADE`` deletes them first. Its suite is its file's."""

    # Its key is its place, (file, position), with the partition's day that a partitioned
    # table's keys hold: it is a file's rows in order too. A node's rows are found by
    # (node, day). No other index, and no id: each is written for every row of every file.
    # On PostgreSQL the key is not an index (junit 0014) but a plain index of the file: a
    # file's rows are written once, by its upload, and share its entry (a B-tree's
    # deduplication), where the key's took 32 bytes a row. There the columns are in the
    # order that leaves no padding: 8 bytes, 4, 2, then text.
    pk = models.CompositePrimaryKey("file", "position", "day")
    file = models.ForeignKey(JUnitFile, on_delete=models.CASCADE, related_name="results",
                             db_index=False, db_constraint=False)
    node = models.ForeignKey(Node, on_delete=cascade_by_day, related_name="+",
                             db_index=False, db_constraint=False)
    day = models.DateField()
    position = models.PositiveIntegerField(help_text="Its first testcase's index in the file.")
    outcome = models.CharField(max_length=7, choices=[(o.value, o.value) for o in Outcome],
                               help_text="Its last attempt's.")
    # A file's counts of one test fit in 2 bytes (junit.rules.ATTEMPTS_MAX); its flaky
    # failures are its job's, over every file of the job.
    attempts = models.PositiveSmallIntegerField(default=1)
    passes = models.PositiveSmallIntegerField(default=0)
    failures = models.PositiveSmallIntegerField(default=0, help_text="Failed or error attempts.")
    flaky_failures = models.PositiveIntegerField(
        default=0, help_text="The flaky failures this file added to its job's (junit.detect).")
    duration = RealField(null=True, blank=True, help_text="Seconds, all attempts.")
    message = models.CharField(max_length=MESSAGE_MAX_LENGTH, blank=True,
                               help_text="The first failure's first line.")
    signature = models.CharField(max_length=SIGNATURE_MAX_LENGTH, blank=True)

    class Meta:
        ordering = ["position"]
        indexes = [NodeResultsIndex(fields=["node", "-day"], name="caseresult_node_recent")]

    def __str__(self):
        return f"{self.node_id}: {self.outcome} ({self.passes}/{self.attempts} passed)"


class NodeRollup(models.Model):
    """A rollup row of one node. Its unique key and its index lead with the suite or the
    node, so the foreign keys need no index of their own (each is written per row). Nor
    have they a constraint in the database (migration 0015): PostgreSQL checked the two at
    the commit of every row inserted, a day's first file's 10,000 rollups as many queries
    and row locks. The upload writes them under its suite's lock, and their suite and node
    go only through Django's delete, whose ``CASCADE`` deletes them first."""

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="+",
                              db_index=False, db_constraint=False)
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="+", db_index=False,
                             db_constraint=False)

    class Meta:
        abstract = True


class DayRollup(NodeRollup):
    """A node's rollup row of one day and branch."""

    day = models.DateField()
    branch = models.CharField(max_length=META, blank=True)

    class Meta:
        abstract = True


class NodeDay(DayRollup):
    """A node's runs (passed or failed attempts), failures, flaky failures (failures in a
    job it is flaky in) and the commits it became flaky on, per day and branch."""

    runs = models.PositiveIntegerField(default=0)
    failures = models.PositiveIntegerField(default=0)
    flaky_failures = models.PositiveIntegerField(default=0)
    flaky_commits = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["suite", "day", "branch", "node"],
                                    name="one_node_day_per_branch")
        ]
        indexes = [
            models.Index(fields=["node", "day"], name="nodeday_node_day"),
            # The flaky-tests page's ranking reads only the days a test was flaky on: by
            # suite and day, or (a text filter on the node id) by node.
            models.Index(fields=["suite", "day"], condition=models.Q(flaky_failures__gt=0),
                         name="nodeday_flaky_days"),
            models.Index(fields=["node", "day"], condition=models.Q(flaky_failures__gt=0),
                         name="nodeday_flaky_node_days"),
        ]

    def __str__(self):
        return f"{self.node_id} {self.day} {self.branch or '-'}: {self.flaky_failures} flaky"


class SignatureDay(DayRollup):
    """A node's failures with one signature, per day and branch."""

    signature = models.CharField(max_length=SIGNATURE_MAX_LENGTH, blank=True)
    failures = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["node", "day", "branch", "signature"],
                                    name="one_signature_day")
        ]
        indexes = [models.Index(fields=["suite", "day"], name="signatureday_suite_day")]

    def __str__(self):
        return f"{self.node_id} {self.day}: {self.signature!r}, {self.failures} failures"


class NodeSummary(NodeRollup):
    """A node's ``NodeDay`` rows of the summary's days (all branches, the last 30 to
    ``Suite.junit_summary_day``) in one row: their sums, the first and last day with flaky
    failures, and the flaky failures of each day. Every upload updates its tests' rows: on
    PostgreSQL the table's pages are kept 70% full (migration 0008), so that an update
    stays on its row's page."""

    runs = models.PositiveIntegerField(default=0)
    failures = models.PositiveIntegerField(default=0)
    flaky_failures = models.PositiveIntegerField(default=0)
    flaky_commits = models.PositiveIntegerField(default=0)
    first_flaky = models.DateField(null=True, blank=True)
    last_flaky = models.DateField(null=True, blank=True)
    spark = models.JSONField(default=list, help_text="Flaky failures a day, oldest first.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["node"], name="one_summary_per_node")]
        indexes = [
            # The flaky-tests page's ranking and the overview's count of flaky tests.
            models.Index(fields=["suite", "-flaky_failures", "-flaky_commits", "node"],
                         condition=models.Q(flaky_failures__gt=0), name="summary_ranking"),
            models.Index(fields=["suite", "last_flaky"],
                         condition=models.Q(flaky_failures__gt=0), name="summary_last_flaky"),
        ]

    def __str__(self):
        return f"{self.node_id}: {self.flaky_failures} flaky over the summary's days"


class SignatureSummary(NodeRollup):
    """A node's failures with one signature over the summary's window (``SignatureDay``
    summed)."""

    signature = models.CharField(max_length=SIGNATURE_MAX_LENGTH, blank=True)
    failures = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["node", "signature"],
                                               name="one_signature_summary")]
        indexes = [models.Index(fields=["suite"], name="signaturesummary_suite")]

    def __str__(self):
        return f"{self.node_id}: {self.signature!r}, {self.failures} failures"
