"""Suites, their nodes and tiers, the quarantine ledger, its audit trail and API tokens:
a module per idea (suites, nodes, entries, records), all importable from here.

The node and glob key (``text_key``, ``KeyField``) and ``PolicyDefault`` are defined here:
the migrations name them as ``ledger.models``."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models
from django.utils.deconstruct import deconstructible

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


from .entries import GATE_FIELDS, EntryQuerySet, QuarantineEntry, gate_entry  # noqa: E402
from .nodes import MeasureTarget, Node, NodeQuerySet, TierRule  # noqa: E402
from .records import ApiToken, AuditEvent  # noqa: E402
from .suites import ROLE_RANK, Membership, Role, Suite  # noqa: E402

__all__ = [
    "GATE_FIELDS", "JUNIT_INFRASTRUCTURE_SHARE", "KEY_LENGTH", "ROLE_RANK", "ApiToken",
    "AuditEvent", "EntryQuerySet", "KeyField", "MeasureTarget", "Membership", "Node",
    "NodeQuerySet", "PolicyDefault", "QuarantineEntry", "Role", "Suite", "TierRule",
    "gate_entry", "text_key",
]
