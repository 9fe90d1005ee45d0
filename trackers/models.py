"""A suite's issue tracker (GitHub, GitLab or Jira), the issue opened for each entry or for
a test turning flaky, and the log of every job that called the tracker, each claimed before
its request."""

from __future__ import annotations

from django.db import models

from ledger.models import AuditEvent, Node, QuarantineEntry, Suite


class Tracker(models.Model):
    """Where a suite's entries get their issues. The token is kept encrypted
    (``trackers.crypto``); it is never shown again once saved."""

    class Kind(models.TextChoices):
        GITHUB = "github", "GitHub Issues"
        GITLAB = "gitlab", "GitLab issues"
        JIRA = "jira", "Jira Cloud"

    suite = models.OneToOneField(Suite, on_delete=models.CASCADE, related_name="tracker")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    # The API's root: https://api.github.com, https://gitlab.com, https://acme.atlassian.net.
    site = models.URLField(max_length=500)
    # owner/name on GitHub, the project's id or path on GitLab, the project key on Jira.
    project = models.CharField(max_length=200)
    issue_type = models.CharField(max_length=60, blank=True)  # Jira's, "Bug" by default
    email = models.CharField(max_length=254, blank=True)  # Jira's account, with its API token
    labels = models.CharField(max_length=500, default="flaky-test", blank=True)
    token_encrypted = models.TextField(editable=False)
    on_new_entry = models.BooleanField(default=True)
    # A test's first flaky evidence in CI (a JUnit flip, a gate-attempt flip), and a new
    # test flaky at birth: each opens an issue tied to the test. The day each switch was
    # turned on: evidence first seen before it opens none.
    on_ci_flaky = models.BooleanField(default=False)
    on_born_flaky = models.BooleanField(default=False)
    ci_flaky_since = models.DateField(null=True, blank=True, editable=False)
    born_flaky_since = models.DateField(null=True, blank=True, editable=False)
    # The last audit event read by sync_trackers: later ones are its work.
    cursor = models.BigIntegerField(default=0)
    created_at = models.DateTimeField()
    created_by = models.CharField(max_length=200, blank=True)
    last_error = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"{self.suite.slug} → {self.get_kind_display()} {self.project}"

    @property
    def label_list(self) -> list[str]:
        return [label.strip() for label in self.labels.split(",") if label.strip()]


class TrackerIssue(models.Model):
    """The issue opened for an entry (at most one per entry), or for a test turning flaky
    (``entry`` empty until the test is quarantined: its entry then links this issue)."""

    entry = models.OneToOneField(QuarantineEntry, on_delete=models.CASCADE, null=True,
                                 blank=True, related_name="tracker_issue")
    node = models.ForeignKey(Node, on_delete=models.CASCADE, null=True,
                             related_name="tracker_issues")
    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="tracker_issues")
    kind = models.CharField(max_length=10, choices=Tracker.Kind.choices)
    # GitHub's number, GitLab's iid, Jira's key: what the API's paths name the issue by.
    key = models.CharField(max_length=100)
    url = models.URLField(max_length=2000)
    closed = models.BooleanField(default=False)
    created_at = models.DateTimeField()

    def __str__(self):
        return f"{self.kind} {self.key} for entry {self.entry_id or '-'}, node {self.node_id}"


class TrackerJob(models.Model):
    """One thing to tell the tracker about one entry, or one test turning flaky: claimed
    (a row under a unique key) before the request, so a retried or a racing run never does
    it twice; a failed job is taken again by the next run."""

    class Action(models.TextChoices):
        OPEN = "open", "Open an issue"
        RENEWED = "renewed", "Comment: renewed"
        EXPIRED = "expired", "Comment: expired"
        CLEARED = "cleared", "Comment: cleared"
        CLOSE = "close", "Close the issue"
        CI_FLAKY = "ci_flaky", "Open an issue: flaky in CI"
        BORN_FLAKY = "born_flaky", "Open an issue: flaky at birth"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        SENDING = "sending", "Sending"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"
        SKIPPED = "skipped", "Skipped"

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="tracker_jobs")
    # "open:entry:7", "renewed:event:31", "flaky:node:12" (one per test, whichever trigger).
    key = models.CharField(max_length=100)
    action = models.CharField(max_length=10, choices=Action.choices)
    entry = models.ForeignKey(QuarantineEntry, on_delete=models.CASCADE, null=True,
                              blank=True, related_name="tracker_jobs")
    node = models.ForeignKey(Node, on_delete=models.CASCADE, null=True, blank=True,
                             related_name="+")  # a test's job: no entry
    event = models.ForeignKey(AuditEvent, on_delete=models.SET_NULL, null=True, blank=True,
                              related_name="+")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    response_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["-updated_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["suite", "key"],
                                               name="one_tracker_job_per_key")]

    def __str__(self):
        return f"{self.key} ({self.status})"

    @property
    def test(self) -> Node:
        return self.entry.node if self.entry_id else self.node
