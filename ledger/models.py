"""Suites, their nodes and tiers, the quarantine ledger, its audit trail and API tokens."""

from __future__ import annotations

import hashlib
from datetime import date

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.deconstruct import deconstructible

from flakeboard import rules

from . import predicates

KEY_LENGTH = 32
# A JUnit file with more than this share of its tests failing is an infrastructure failure,
# unless the suite says otherwise (Suite.junit_infrastructure_share).
JUNIT_INFRASTRUCTURE_SHARE = 0.8


def text_key(text: str) -> str:
    """A fixed-length key for a node id or a glob: 128 bits of its SHA-256, in hex.

    Uniqueness and lookups go through the key, not the text: a node id may be 1,000
    four-byte characters, more than a PostgreSQL b-tree entry can hold, and the key is the
    node page's address, which no browser rewrites (a node id may hold ``/../``).
    """
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:KEY_LENGTH]


class KeyField(models.CharField):
    """``text_key`` of another field, set whenever the row is written (``bulk_create``
    included, which calls ``pre_save`` too)."""

    def __init__(self, *args, source: str, **kwargs):
        self.source = source
        kwargs.setdefault("max_length", KEY_LENGTH)
        kwargs.setdefault("editable", False)
        super().__init__(*args, **kwargs)

    def deconstruct(self):
        name, path, args, kwargs = super().deconstruct()
        kwargs["source"] = self.source
        return name, path, args, kwargs

    def pre_save(self, model_instance, add):
        value = text_key(getattr(model_instance, self.source))
        setattr(model_instance, self.attname, value)
        return value


@deconstructible
class PolicyDefault:
    """A policy number's default for a new suite: the deployment's setting, read when the
    suite is created, so that no migration freezes the number it had then."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self):
        return settings.FLAKEBOARD_DEFAULT_POLICY[self.name]

    def __eq__(self, other):
        return isinstance(other, PolicyDefault) and other.name == self.name

    def __hash__(self):
        return hash(self.name)


class Suite(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200, blank=True)
    max_upper_rate = models.FloatField(
        default=PolicyDefault("max_upper_rate"),
        validators=[MinValueValidator(0.0001), MaxValueValidator(1.0)],
        help_text="A measurement passes when its Wilson upper bound is at or below this.",
    )
    min_runs = models.PositiveIntegerField(
        default=PolicyDefault("min_runs"),
        validators=[MinValueValidator(1), MaxValueValidator(1_000_000)],
        help_text="A measurement with fewer runs is not evidence of stability.",
    )
    max_quarantined_share = models.FloatField(
        default=PolicyDefault("max_quarantined_share"),
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="The largest share of the test set that may be quarantined at once.",
    )
    max_quarantine_days = models.PositiveIntegerField(
        default=PolicyDefault("max_quarantine_days"),
        validators=[MinValueValidator(1), MaxValueValidator(365)],
        help_text="How far ahead an entry's expiry may be set.",
    )
    clear_after_clean_measurements = models.PositiveSmallIntegerField(
        default=PolicyDefault("clear_after_clean_measurements"),
        validators=[MinValueValidator(1), MaxValueValidator(rules.CLEAR_AFTER_MAX)],
        help_text="An open entry is ready to clear when its node's last this many "
                  "measurements since the entry was created were each within budget.",
    )
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
    public_badge = models.BooleanField(
        default=False,
        help_text="Anyone with its address may see the status badge (for a README); "
                  "otherwise only the suite's members.",
    )
    # Who owns which path (issue 20): default owners of nodes, never part of the gate.
    codeowners = models.TextField(
        blank=True,
        help_text="The repository's CODEOWNERS file: each node's default owners.",
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
        return rules.FixturePin(self.fixture_manifest, self.fixture_seed)


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


class NodeQuerySet(models.QuerySet):
    def named(self, *nodeids: str):
        """The nodes with these ids, found through their keys (the indexed column)."""
        return self.filter(key__in=[text_key(nodeid) for nodeid in nodeids])


class Node(models.Model):
    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="nodes")
    nodeid = models.CharField(max_length=rules.NODEID_MAX_LENGTH)
    key = KeyField(source="nodeid")
    # A tier 0 or 1 stated by an upload sticks; the effective tier also follows the rules.
    stated_tier = models.PositiveSmallIntegerField(null=True, blank=True)
    tier = models.PositiveSmallIntegerField(default=rules.Tier.REPEAT_BUDGET)
    # The first and last days an upload named the node; None for a node only quarantined
    # by hand, which is not part of the test set for having been created.
    first_seen = models.DateField(null=True, blank=True)
    last_seen = models.DateField(null=True, blank=True)

    objects = NodeQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["suite", "key"], name="unique_node_key_per_suite")
        ]
        indexes = [models.Index(fields=["suite", "last_seen"], name="node_suite_seen")]

    def __str__(self):
        return self.nodeid


class MeasureTarget(models.Model):
    """A node marked to measure: the targets file (``GET .../targets``) lists it first,
    until it is unmarked. Usually marked from the flaky-tests page."""

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="measure_targets")
    node = models.OneToOneField(Node, on_delete=models.CASCADE, related_name="measure_target")
    added_at = models.DateTimeField()
    added_by = models.CharField(max_length=200)

    class Meta:
        ordering = ["added_at", "id"]

    def __str__(self):
        return f"measure {self.node_id}"


class TierRule(models.Model):
    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="tier_rules")
    glob = models.CharField(max_length=rules.NODEID_MAX_LENGTH)
    glob_key = KeyField(source="glob")
    tier = models.PositiveSmallIntegerField(
        choices=[(0, "0: property check"), (1, "1: pinned fixture"), (2, "2: repeat budget")]
    )
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["tier", "glob"]
        constraints = [
            models.UniqueConstraint(fields=["suite", "glob_key"], name="unique_glob_key_per_suite")
        ]

    def __str__(self):
        return f"{self.glob} → tier {self.tier}"

    @property
    def spec(self) -> rules.TierRuleSpec:
        return rules.TierRuleSpec(self.glob, self.tier)


class EntryQuerySet(models.QuerySet):
    def open(self):
        return self.filter(predicates.OPEN)

    def violating(self):
        return self.filter(predicates.VIOLATING)

    def for_gate(self):
        """What the served ledger holds: open entries, expired included, no violations."""
        return self.filter(predicates.FOR_GATE)

    def live(self, today: date):
        """Entries that freeze their node and count toward the quarantined share."""
        return self.filter(predicates.live_entry_q(today))

    def in_state(self, state: rules.EntryState, today: date):
        return self.filter(predicates.entry_state_q(state, today))

    def ready_to_clear(self):
        """Open entries whose node's latest measurements say it is fixed (issue 20)."""
        return self.filter(predicates.READY_TO_CLEAR)


class QuarantineEntry(models.Model):
    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="entries")
    node = models.ForeignKey(Node, on_delete=models.PROTECT, related_name="entries")
    klass = models.CharField("class", max_length=20, default="flake")
    seed_base = models.BigIntegerField(null=True, blank=True)
    n = models.PositiveIntegerField(default=0)
    fails = models.PositiveIntegerField(default=0)
    upper95 = models.FloatField(default=1.0, help_text="The server's Wilson bound for fails/n.")
    reported_upper95 = models.FloatField(null=True, blank=True)
    upper95_mismatch = models.BooleanField(default=False)
    owner = models.CharField(max_length=rules.OWNER_MAX_LENGTH)
    expires = models.DateField()
    evidence = models.CharField(max_length=rules.EVIDENCE_MAX_LENGTH)
    note = models.TextField(blank=True)
    renewals = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField()
    created_by = models.CharField(max_length=200)
    updated_at = models.DateTimeField()
    cleared_at = models.DateTimeField(null=True, blank=True)
    cleared_note = models.TextField(blank=True)
    # Release when fixed: set and unset at ingest (ledger.clearance), never by hand. A flag,
    # not a state: an entry can be expiring and ready at once.
    ready_to_clear = models.BooleanField(
        default=False,
        help_text="The node's last measurements since the entry was created were each "
                  "within budget (the suite's clear_after_clean_measurements of them).",
    )
    ready_since = models.DateTimeField(null=True, blank=True)
    trail = models.JSONField(
        default=list, blank=True,
        help_text="The node's latest measurements since the entry was created, oldest first "
                  "(at most 20): report, n, fails, within budget.",
    )

    objects = EntryQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "quarantine entries"
        ordering = ["expires", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["node"],
                condition=Q(cleared_at__isnull=True),
                name="one_open_entry_per_node",
            )
        ]
        indexes = [
            models.Index(fields=["suite", "cleared_at", "expires"], name="entry_suite_open_exp"),
            models.Index(fields=["suite", "owner"], name="entry_suite_owner"),
        ]

    def __str__(self):
        return f"{self.node.nodeid} ({self.owner}, until {self.expires})"

    @property
    def tier_violation(self) -> bool:
        return self.cleared_at is None and not rules.quarantinable(self.node.tier)

    @property
    def facts(self) -> rules.EntryFacts:
        return rules.EntryFacts(self.expires, self.tier_violation)

    def state(self, today: date) -> rules.EntryState:
        return rules.entry_state(
            expires=self.expires,
            today=today,
            cleared=self.cleared_at is not None,
            tier_violation=self.tier_violation,
        )

    @property
    def trail_clean(self) -> list[bool]:
        return [seen["clean"] for seen in self.trail]

    def outlook(self, policy: rules.Policy) -> rules.ClearanceOutlook:
        """What a fresh measurement needs to clear the entry, at the node's recent rate:
        its latest measurements since the entry was made, or else the one it was made on."""
        recent = [(seen["n"], seen["fails"]) for seen in self.trail[-rules.RECENT_MEASUREMENTS:]]
        rate = rules.recent_rate(recent or [(self.n, self.fails)])
        return rules.clearance_outlook(policy, rate)

    def age_days(self, today: date) -> int:
        return (today - self.created_at.date()).days

    @property
    def evidence_is_link(self) -> bool:
        return rules.evidence_is_link(self.evidence)

    def gate_dict(self) -> dict:
        """The entry as the budget script's flake_ledger.json holds it (SPEC 3.3)."""
        return gate_entry(*(getattr(self, name) for name in GATE_FIELDS))


GATE_FIELDS = ("klass", "seed_base", "n", "fails", "upper95", "owner", "expires", "evidence")


def gate_entry(klass, seed_base, n, fails, upper95, owner, expires, evidence) -> dict:
    """One flake_ledger.json entry from the GATE_FIELDS values, in their order."""
    return {
        "class": klass,
        "seed_base": seed_base,
        "n": n,
        "fails": fails,
        "upper95": round(upper95, 4),
        "owner": owner,
        "expires": expires.isoformat(),
        "evidence": evidence,
    }


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
