"""Trust policies: which CI's OIDC tokens a suite accepts instead of a board token, and
which of their refs is the default branch's (``ledger.oidc``; docs/trusted-ci.md)."""

from __future__ import annotations

from django.db import models

from flakeboard import rules

from .suites import Suite


class TrustPolicy(models.Model):
    """One CI the suite trusts: an issuer, a repository (GitLab: a project), optionally
    one workflow (GitLab: one CI file), and the ref of the default branch."""

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="trust_policies")
    kind = models.CharField(max_length=10, choices=[
        (rules.Issuer.GITHUB.value, "GitHub Actions"), (rules.Issuer.GITLAB.value, "GitLab"),
        (rules.Issuer.CUSTOM.value, "Custom")])
    issuer = models.URLField(max_length=200, help_text="The tokens' iss claim.")
    repository = models.CharField(max_length=200, help_text="owner/name, or group/project.")
    workflow = models.CharField(max_length=200, blank=True,
                                help_text="Empty: any workflow of the repository.")
    default_ref = models.CharField(max_length=rules.META_MAX_LENGTH,
                                   help_text="The default branch's ref claim.")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self):
        return f"{self.issuer} {self.repository}"

    @property
    def label(self) -> str:
        workflow = f" ({self.workflow})" if self.workflow else ""
        return f"{self.get_kind_display()} {self.repository}{workflow} at {self.default_ref}"
