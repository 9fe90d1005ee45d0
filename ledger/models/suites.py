"""Suites, their members and roles."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from flakeboard import rules

from .fields import JUNIT_INFRASTRUCTURE_SHARE, PolicyDefault, branch_name


def within(number: str) -> list:
    """A policy number's validators: the range ``rules.POLICY_BOUNDS`` gives it, which the
    deployment's default for it keeps to as well (flakeboard/settings.py)."""
    low, high = rules.POLICY_BOUNDS[number]
    return [MinValueValidator(low), MaxValueValidator(high)]


def policy_number(field: type[models.Field], number: str, help_text: str) -> models.Field:
    """A policy number's field: the deployment's default for it, its range, and what it
    means."""
    return field(default=PolicyDefault(number), validators=within(number), help_text=help_text)


class Suite(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200, blank=True)
    max_upper_rate = policy_number(models.FloatField, "max_upper_rate", (
        "A measurement passes when its Wilson upper bound is at or below this."))
    min_runs = policy_number(models.PositiveIntegerField, "min_runs", (
        "A measurement with fewer runs is not evidence of stability."))
    max_quarantined_share = policy_number(models.FloatField, "max_quarantined_share", (
        "The largest share of the test set that may be quarantined at once."))
    max_quarantine_days = policy_number(models.PositiveIntegerField, "max_quarantine_days", (
        "How far ahead an entry's expiry may be set."))
    clear_after_clean_measurements = policy_number(
        models.PositiveSmallIntegerField, "clear_after_clean_measurements", (
        "An open entry is ready to clear when its node's last this many "
        "measurements since the entry was created were each within budget."))
    # The new-test guard (docs/new-tests.md): what gate --measure --commit asks of a test
    # the board holds no evidence of. Never part of the budget gate's policy.
    new_test_runs = policy_number(models.PositiveSmallIntegerField, "new_test_runs", (
        "How many times gate --measure runs each new tier-2 test (fewer when "
        "slow, never fewer than 3)."))
    new_test_share = policy_number(models.FloatField, "new_test_share", (
        "When more than this share of a selection is new, the guard measures only "
        "the first new tests up to it, so CI stays fast."))
    # What a patch's gate measures (SPEC 2.4c): the seconds gate --measure may spend on the
    # selected tier-2 nodes the patch calls for. Never part of the budget gate's policy.
    measure_budget = policy_number(models.PositiveIntegerField, "measure_budget", (
        "The seconds gate --measure may spend measuring the tier-2 tests a patch "
        "calls for (failed, new, in a changed test file, flaky-prone), estimated "
        "from their time in the gate's run."))
    fixture_manifest = models.CharField(
        max_length=200, blank=True, help_text="The pinned fixture manifest digest (empty: no pin)."
    )
    fixture_seed = models.BigIntegerField(null=True, blank=True)
    # Passive evidence (the junit app): never part of the gate.
    junit_infrastructure_share = models.FloatField(
        default=JUNIT_INFRASTRUCTURE_SHARE,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="A JUnit file in which more than this share of the tests fail is taken for "
                  "a broken runner (infrastructure), and left out of flaky-test detection.",
    )
    # The day the summary of its tests' last days counts to (``junit.summary``): the pages
    # read the summary only when it is today. Here, so that a page reads it with the suite.
    junit_summary_day = models.DateField(null=True, blank=True, editable=False)
    public_badge = models.BooleanField(
        default=False,
        help_text="Anyone with its address may see the status badge (for a README); "
                  "otherwise only the suite's members.",
    )
    # Release when fixed (issue 20): manage.py notify clears the ready entries itself.
    auto_clear = models.BooleanField(
        default=False,
        help_text="manage.py notify clears every entry ready to clear, the board as the actor "
                  "and the clean measurements as the note's evidence.",
    )
    # Who owns which path (issue 20): default owners of nodes, never part of the gate.
    codeowners = models.TextField(
        blank=True,
        help_text="The repository's CODEOWNERS file: each node's default owners.",
    )
    # The test set when a report does not size it (issue 34): CI's runs on this branch.
    default_branch = models.CharField(
        max_length=rules.META_MAX_LENGTH,
        default=rules.DEFAULT_BRANCH,
        validators=[branch_name],
        help_text="The branch whose CI runs (their JUnit files) size the test set; JUnit "
                  "from any other branch never does.",
    )
    # Bumped by every change to what the served ledger holds: the gate endpoint's ETag.
    ledger_revision = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self):
        return self.slug

    @property
    def title(self):
        return self.name or self.slug

    @property
    def policy(self) -> rules.Policy:
        return rules.Policy(
            max_upper_rate=self.max_upper_rate,
            min_runs=self.min_runs,
            max_quarantined_share=self.max_quarantined_share,
            max_quarantine_days=self.max_quarantine_days,
        )

    @property
    def fixture_pin(self) -> rules.FixturePin | None:
        if not self.fixture_manifest:
            return None
        # Canonical: a pin stored before the board took one spelling (the bare hex, say) is
        # compared, served and shown as sha256:<hex>, as every pin set since is stored.
        return rules.FixturePin(rules.digest_key(self.fixture_manifest), self.fixture_seed)


class Role(models.TextChoices):
    VIEWER = "viewer", "Viewer"
    OWNER = "owner", "Owner"
    LEAD = "lead", "Lead"


ROLE_RANK = {Role.VIEWER: 0, Role.OWNER: 1, Role.LEAD: 2}


class Membership(models.Model):
    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.VIEWER)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["suite", "user"], name="one_membership_per_user")
        ]

    def __str__(self):
        return f"{self.user} is {self.role} of {self.suite}"
