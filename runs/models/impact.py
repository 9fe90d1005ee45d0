"""A suite's impact map: which source files each test executed."""

from __future__ import annotations

from django.db import models

from flakeboard import rules
from ledger.models import KeyField, Suite


class ImpactMap(models.Model):
    """A suite's impact map (SPEC 2.4c): which source files each test executed, recorded by
    one gate run (``gate --record-impact``) and replacing the one before; its rows are
    ImpactPath."""

    suite = models.OneToOneField(Suite, on_delete=models.CASCADE, related_name="impact_map")
    commit = models.CharField(max_length=rules.META_MAX_LENGTH, blank=True)
    recorded_at = models.DateTimeField()
    nodes = models.PositiveIntegerField(help_text="How many tests the map holds.")
    paths = models.PositiveIntegerField(help_text="How many distinct source files it names.")

    def __str__(self):
        return f"{self.suite_id} at {self.commit or '-'}: {self.nodes} tests"


class ImpactPath(models.Model):
    """One source file one test executed, in its suite's impact map. Asked by path (the
    key of a path, since a path may be longer than a b-tree entry holds)."""

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="+")
    node = models.CharField(max_length=rules.NODEID_MAX_LENGTH)
    path = models.CharField(max_length=rules.IMPACT_PATH_MAX_LENGTH)
    path_key = KeyField(source="path")

    class Meta:
        indexes = [models.Index(fields=["suite", "path_key"], name="impact_suite_path")]

    def __str__(self):
        return f"{self.node} runs {self.path}"
