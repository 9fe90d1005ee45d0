"""A suite's nodes, the nodes marked to measure, and the tier rules."""

from __future__ import annotations

from django.db import models

from flakeboard import rules

from .fields import KeyField, WrittenKeyField, text_key
from .suites import Suite


class NodeQuerySet(models.QuerySet):
    def named(self, *nodeids: str):
        """The nodes with these ids, found through their keys (the indexed column)."""
        return self.filter(key__in=[text_key(nodeid) for nodeid in nodeids])


class Node(models.Model):
    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="nodes")
    nodeid = models.CharField(max_length=rules.NODEID_MAX_LENGTH)
    key = KeyField(source="nodeid")
    # How pytest writes the id in JUnit XML, as a key: a file's testcases find their nodes
    # by it (junit.nodes), reading only their own.
    written_key = WrittenKeyField(source="nodeid")
    # The tier the latest upload that stated one stated: shown, never deciding. The tier is
    # the suite's tier rules' alone (rules.resolve_tier).
    stated_tier = models.PositiveSmallIntegerField(null=True, blank=True)
    tier = models.PositiveSmallIntegerField(default=rules.Tier.REPEAT_BUDGET)
    # The first and last days an upload named the node; None for a node only quarantined
    # by hand, which is not part of the test set for having been created.
    first_seen = models.DateField(null=True, blank=True)
    last_seen = models.DateField(null=True, blank=True)
    # The commit of the first evidence of it (a measurement, a signal record, a JUnit
    # result): None while there is none, "" for evidence older than this record. A node is
    # new at a commit while this is None or that commit (rules.is_new). Both None and ""
    # are needed, hence a nullable string.
    first_commit = models.CharField(  # noqa: DJ001
        max_length=rules.META_MAX_LENGTH, null=True, blank=True)

    objects = NodeQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["suite", "key"], name="unique_node_key_per_suite")
        ]
        indexes = [
            models.Index(fields=["suite", "last_seen"], name="node_suite_seen"),
            models.Index(fields=["suite", "written_key"], name="node_suite_written"),
        ]

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
