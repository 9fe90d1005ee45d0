"""The lock row of a scheduled job on a database without advisory locks (SQLite): one row
per job and suite while a run holds it (``ledger.job_locks``)."""

from __future__ import annotations

from django.db import models


class JobLock(models.Model):
    job = models.CharField(max_length=40)
    # 0 for a job over every suite (prune): no foreign key, so a suite's deletion waits for
    # nothing and a lock never outlives its meaning by more than its staleness.
    suite_id = models.PositiveIntegerField(default=0)
    holder = models.CharField(max_length=200, help_text="host:pid of the run that holds it.")
    taken_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "suite_id"], name="one_job_lock")]

    def __str__(self):
        return f"{self.job} {self.suite_id or 'all suites'}: {self.holder} since {self.taken_at}"
