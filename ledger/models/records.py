"""The audit trail and the API tokens."""

from __future__ import annotations

from django.db import models

from .entries import QuarantineEntry
from .suites import Suite


class AuditEvent(models.Model):
    """Append-only record of every change to a suite's ledger and settings."""

    class Action(models.TextChoices):
        CREATE = "create", "Quarantined"
        IMPORT = "import", "Imported"
        RENEW = "renew", "Renewed"
        CLEAR = "clear", "Cleared"
        SETTINGS = "settings", "Settings changed"
        TIER_RULE = "tier_rule", "Tier rule changed"
        TOKEN = "token", "API token changed"
        MEMBER = "member", "Membership changed"
        TARGET = "target", "Measurement targets changed"
        TICKET = "ticket", "Ticket changed"

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="events")
    entry = models.ForeignKey(
        QuarantineEntry, on_delete=models.CASCADE, null=True, blank=True, related_name="events"
    )
    action = models.CharField(max_length=20, choices=Action.choices)
    actor = models.CharField(max_length=200)
    at = models.DateTimeField()
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["at", "id"]
        indexes = [
            models.Index(fields=["entry", "at"], name="event_entry_at"),
            models.Index(fields=["suite", "at"], name="event_suite_at"),
        ]

    def __str__(self):
        return f"{self.get_action_display()} by {self.actor} at {self.at:%Y-%m-%d %H:%M}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise PermissionError("Audit events are append-only.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise PermissionError("Audit events are append-only.")

    @property
    def changes(self) -> list[tuple[str, object, object]]:
        keys = list(dict.fromkeys([*self.before, *self.after]))
        return [
            (k, self.before.get(k), self.after.get(k))
            for k in keys
            if self.before.get(k) != self.after.get(k)
        ]


class ApiToken(models.Model):
    class Scope(models.TextChoices):
        READ = "read", "Read"
        WRITE = "write", "Write"

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="tokens")
    name = models.CharField(max_length=100, blank=True)
    scope = models.CharField(max_length=5, choices=Scope.choices)
    # The token is never stored: only its public prefix and the SHA-256 of the whole.
    prefix = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=200, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # None: the token never expires. From this instant on it is refused (401 token_expired).
    expires_at = models.DateTimeField(null=True, blank=True)
    # A write token kept where only the default branch's CI jobs can read it (a protected
    # variable): its uploads are the default branch's, and while the suite keeps one, only
    # such uploads size the test set (``rules.trust``; docs/trusted-ci.md).
    default_branch_only = models.BooleanField(
        default=False,
        help_text="Uploads only for the suite's default branch; only such a token's JUnit "
                  "sizes the test set.",
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.prefix}… ({self.scope}, {self.suite})"

    def is_expired(self, now) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    @property
    def label(self) -> str:
        return f"token {self.prefix}" + (f" ({self.name})" if self.name else "")

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
