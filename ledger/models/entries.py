"""The quarantine ledger's entries, and an entry as flake_ledger.json holds it."""

from __future__ import annotations

from datetime import date

from django.db import models
from django.db.models import Q

from flakeboard import rules

from .. import predicates
from .nodes import Node
from .suites import Suite


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
    # Where the work to fix the node is tracked: the URL of its issue in the suite's tracker
    # (written by the trackers app through ``ledger.tickets``), and when that issue was seen
    # closed there while the entry stayed open (the entry is never cleared by it).
    ticket = models.URLField(max_length=2000, blank=True)
    ticket_closed_at = models.DateTimeField(null=True, blank=True)
    trail = models.JSONField(
        default=list, blank=True,
        help_text="The node's latest measurements since the entry was created, and the "
                  "failures CI saw since, oldest first (at most 20): report, n, fails, "
                  "classification, clean; or ci (junit, gate), commit, count.",
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

    @property
    def trail_runs(self) -> list[tuple[int, int]]:
        """(n, fails) of each measurement since the entry was made, oldest first."""
        return [(seen["n"], seen["fails"]) for seen in self.trail if rules.is_measurement(seen)]

    def outlook(self, policy: rules.Policy) -> rules.ClearanceOutlook:
        """What a fresh measurement needs to clear the entry, at the node's recent rate:
        its latest measurements since the entry was made, or else the one it was made on."""
        recent = self.trail_runs[-rules.RECENT_MEASUREMENTS:]
        rate = rules.recent_rate(recent or [(self.n, self.fails)])
        return rules.clearance_outlook(policy, rate)

    def rate_change(self) -> rules.RateChange | None:
        """The node's recent rate against the one the entry was made on."""
        return rules.rate_change((self.n, self.fails), self.trail_runs)

    def age_days(self, today: date) -> int:
        cleared = self.cleared_at.date() if self.cleared_at else None
        return rules.entry_age_days(self.created_at.date(), today, cleared)

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
