"""The suite's nodes as uploads and JUnit files name them: read by id, and the new ones
created with their tier. One writer of nodes for both: every caller holds the suite's
write lock (``ledger.locks``), so no insert here races another."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import date

from django.db import connection

from flakeboard import rules
from web.bulk import insert_chunked, plain_rows, update_pks

from .models import Node, NodeQuerySet, Suite, node_written_key, text_key

CHUNK = 5000  # ids per IN list: far under SQLite's variable limit (32,766)
NODE_COLUMNS = ("suite_id", "nodeid", "key", "written_key", "stated_tier", "tier", "first_seen",
                "last_seen", "first_commit")


def nodes_named(nodes: NodeQuerySet, nodeids: Iterable[str],
                values: Sequence[str]) -> dict[str, tuple]:
    """Among ``nodes`` (one suite's), those ``nodeids`` names, each id's ``values`` as a
    tuple of plain values. By key for a few; for many (most of a suite, as a CI upload or
    a job's JUnit file is) the suite's nodes read once and kept when named."""
    wanted = set(nodeids)
    if len(wanted) <= CHUNK:
        nodes = nodes.named(*sorted(wanted))
    rows = plain_rows(nodes.values_list("nodeid", *values), CHUNK)
    return {nodeid: tuple(rest) for nodeid, *rest in rows if nodeid in wanted}


def nodes_create(suite: Suite, nodeids: Iterable[str], specs: list, *,
                 stated: Mapping[str, int | None] | None = None,
                 seen: date | None = None, evidence_at: str | None = None) -> None:
    """New nodes of ``suite``, none of them stored yet, each with the tier the suite's tier
    rules (``specs``) give it, and the tier its upload ``stated`` kept beside it.
    ``seen``: the day a gate upload named them, their first and last seen; None for a node
    a JUnit file names first, which has been seen by no gate upload. ``evidence_at``: the
    commit of the evidence they are created for, their first (``rules.is_new``); None
    for a node named without evidence (a cause's test)."""
    day = None if seen is None else connection.ops.adapt_datefield_value(seen)
    rows = []
    for nodeid in nodeids:
        tier = rules.resolve_tier(nodeid, specs).tier
        rows.append((suite.pk, nodeid, text_key(nodeid), node_written_key(nodeid),
                     (stated or {}).get(nodeid), tier, day, day,
                     rules.first_commit_after(None, evidence_at) if evidence_at else None))
    insert_chunked(Node, NODE_COLUMNS, rows)


def evidence_stored(pks: Sequence[int], commit: str) -> None:
    """Evidence at ``commit`` is stored for the nodes ``pks``, which had none before: it is
    their first (``rules.first_commit_after``)."""
    update_pks(Node, sorted(pks), first_commit=rules.first_commit_after(None, commit))
