"""What the models share and the migrations name: the node and glob key (``text_key``,
``KeyField``), a node's written form's key (``written_key``, ``WrittenKeyField``),
``PolicyDefault``, and the numbers they build on. Re-exported by ``ledger.models``, the
path the migrations use; the model modules import it from here, so that the package
imports its modules and none imports the package back."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.deconstruct import deconstructible

from flakeboard import rules

KEY_LENGTH = 32
# A JUnit file with more than this share of its tests failing is an infrastructure failure,
# unless the suite says otherwise (Suite.junit_infrastructure_share).
JUNIT_INFRASTRUCTURE_SHARE = 0.8


def branch_name(value: str) -> None:
    """A validator: ``value`` is a git branch's name (``rules.branch_problem``)."""
    if problem := rules.branch_problem(value):
        raise ValidationError(problem, code="invalid_branch")


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
        name, _, args, kwargs = super().deconstruct()
        kwargs["source"] = self.source
        return name, "ledger.models.KeyField", args, kwargs

    def pre_save(self, model_instance, add):
        value = self.key_of(getattr(model_instance, self.source))
        setattr(model_instance, self.attname, value)
        return value

    key_of = staticmethod(text_key)


def written_key(classname: str, name: str) -> str:
    """The key of a testcase's (classname, name) as pytest writes it in JUnit XML."""
    return text_key(rules.written_text(classname, name))


def node_written_key(nodeid: str) -> str:
    """The key of the form pytest writes ``nodeid`` in (``rules.pytest_written``)."""
    return written_key(*rules.pytest_written(nodeid))


class WrittenKeyField(KeyField):
    """``node_written_key`` of a node id, set whenever the row is written: the indexed
    column a JUnit file's testcases find the suite's nodes by (``junit.nodes``)."""

    def deconstruct(self):
        name, _, args, kwargs = super().deconstruct()
        return name, "ledger.models.WrittenKeyField", args, kwargs

    key_of = staticmethod(node_written_key)


@deconstructible(path="ledger.models.PolicyDefault")
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
