"""CI's runs on the default branch, as their JUnit files show them: what sizes the test
set when a report does not (``rules.sizing_run``; docs/test-set.md).

The ``junit`` app adds each file's tests (``ledger.test_set.ci_run_add``); the ledger
reads the runs back. A run keeps the set of its tests' nodes while it is among the
branch's newest runs (``MEMBERS_KEPT``), so a job's file adds only the tests the others
did not name; an older run keeps only its count.
"""

from __future__ import annotations

from datetime import UTC

from django.db import models

from flakeboard import rules

from .suites import Suite


class CiRun(models.Model):
    """One commit's CI run on one branch: the jobs that uploaded JUnit and their tests."""

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="ci_runs",
                              db_index=False)
    branch = models.CharField(max_length=rules.META_MAX_LENGTH)
    commit = models.CharField(max_length=rules.META_MAX_LENGTH)
    jobs = models.JSONField(default=list, help_text="The jobs' names, sorted.")
    tests = models.PositiveIntegerField(default=0, help_text="Distinct tests over its files.")
    files = models.PositiveIntegerField(default=0)
    first_at = models.DateTimeField()
    last_at = models.DateTimeField()
    last_day = models.DateField()
    # The tests' node keys (``ledger.test_set.members_packed``); null once let go.
    members = models.BinaryField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-first_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["suite", "branch", "commit"],
                                    name="one_ci_run_per_commit")
        ]
        indexes = [models.Index(fields=["suite", "branch", "-first_at"], name="cirun_recent")]

    def __str__(self):
        return f"{self.branch} {self.commit[:12]}: {self.tests} tests, {len(self.jobs)} jobs"

    @property
    def facts(self) -> rules.CiRunFacts:
        return rules.CiRunFacts(self.commit, self.branch, frozenset(self.jobs), self.tests,
                                self.last_day, self.first_at.astimezone(UTC).date())
