"""A suite's CODEOWNERS (issue 20): set by a lead or by CI, read for each node's default
owners. The file is checked whole (its size, then every line) before it is stored, and
the change is audited in the same transaction."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import Enum

from django.core.exceptions import ValidationError
from django.db import transaction

from flakeboard import rules

from .audit import record_event
from .locks import lock_suite
from .models import AuditEvent, QuarantineEntry, Suite


def _summary(text: str) -> dict:
    """What the audit keeps of a file: its size in rules and a digest, not the text."""
    return {
        "codeowners_rules": len(rules.codeowners_of(text)),
        "codeowners_sha256": hashlib.sha256(text.encode()).hexdigest()[:16] if text else "",
    }


def codeowners_parse(text: str) -> rules.Codeowners:
    """The file's rules; a ValidationError on ``codeowners`` naming each bad line."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > rules.CODEOWNERS_MAX_BYTES:
        raise ValidationError({"codeowners": ValidationError(
            f"The file is {size} bytes; GitHub reads at most "
            f"{rules.CODEOWNERS_MAX_BYTES} bytes of a CODEOWNERS file.", code="too_large",
        )})
    if "\x00" in text:
        raise ValidationError({"codeowners": "The file holds a NUL byte: is it text?"})
    try:
        return rules.parse_codeowners(text)
    except rules.CodeownersInvalid as exc:
        refusal = ValidationError({"codeowners": [
            ValidationError(str(problem), code="invalid_line") for problem in exc.problems
        ]})
        refusal.problems = exc.problems  # each with its line, for the API's details
        raise refusal from None


def codeowners_set(*, suite: Suite, text: str, actor: str) -> rules.Codeowners:
    """Store the suite's CODEOWNERS (empty: none) once every line parses."""
    text = text.replace("\r\n", "\n")
    parsed = codeowners_parse(text)
    with transaction.atomic():
        locked = lock_suite(suite.pk)
        if locked.codeowners != text:
            before = _summary(locked.codeowners)
            locked.codeowners = text
            locked.save(update_fields=["codeowners"])
            record_event(
                suite=locked, action=AuditEvent.Action.SETTINGS, actor=actor,
                before=before, after=_summary(text),
                note="CODEOWNERS set" if text else "CODEOWNERS removed",
            )
    suite.codeowners = text
    return parsed


def codeowners_saved(parsed: rules.Codeowners) -> str:
    """What a change of the file says once stored (the settings page, the command)."""
    if not parsed.rules:
        return "No CODEOWNERS: nodes have no default owner."
    return (f"CODEOWNERS saved: {rules.plural(len(parsed), 'rule')}, "
            f"{rules.plural(len(parsed.owners), 'owner')}.")


def suite_codeowners(suite: Suite) -> rules.Codeowners:
    return rules.codeowners_of(suite.codeowners)


def node_owners(suite: Suite, nodeid: str) -> tuple[str, ...]:
    """The owners CODEOWNERS gives a node (none without a file, a path or a rule)."""
    return suite_codeowners(suite).owners_of_node(nodeid)


class Unowned(Enum):
    """Why CODEOWNERS offers a new entry no owner."""

    NO_FILE = "no_file"  # the suite has no CODEOWNERS
    NO_NODE = "no_node"  # no node id is given yet
    NO_PATH = "no_path"  # the node id names no file (com.acme.Test::name)
    NO_OWNER = "no_owner"  # no line matches the path, or the line that does names no one


@dataclass(frozen=True)
class OwnerOffer:
    """The owner a new entry is offered and where it came from: the first owner of the
    CODEOWNERS line that decides the node's path (``rule``); else the signed-in user,
    ``unowned`` saying why; neither: a link's owner."""

    owner: str
    rule: rules.CodeownersRule | None = None
    unowned: Unowned | None = None


def owner_offer(suite: Suite, nodeid: str, signed_in: str) -> OwnerOffer:
    """The owner a new entry of ``nodeid`` is offered, whether or not CI has named the
    node yet: CODEOWNERS matches the path in the id."""
    codeowners = suite_codeowners(suite)
    rule = codeowners.rule_for_node(nodeid)
    if rule is not None and rule.owners:
        return OwnerOffer(rule.owners[0], rule=rule)
    if not codeowners.rules:
        unowned = Unowned.NO_FILE
    elif not nodeid:
        unowned = Unowned.NO_NODE
    elif rules.node_path(nodeid) is None:
        unowned = Unowned.NO_PATH
    else:
        unowned = Unowned.NO_OWNER
    return OwnerOffer(signed_in, unowned=unowned)


def owner_outside_codeowners(codeowners: rules.Codeowners, entry: QuarantineEntry) -> bool:
    """The entry's owner is not among the code owners of its node's path; False when
    CODEOWNERS names no owner for it (nothing to disagree with)."""
    owners = codeowners.owners_of_node(entry.node.nodeid)
    return bool(owners) and not rules.owner_listed(entry.owner, owners)


def entries_owned_by(codeowners: rules.Codeowners, entries, owner: str):
    """``entries`` (a queryset) narrowed to those whose node's code owners include
    ``owner``: one read of their node ids."""
    wanted = [
        pk for pk, nodeid in entries.values_list("pk", "node__nodeid")
        if rules.owner_listed(owner, codeowners.owners_of_node(nodeid))
    ]
    return entries.filter(pk__in=wanted)
