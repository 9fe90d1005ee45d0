"""An upload's nodes: each uploaded node id's node, stored, marked seen, its stated tier
made sticky. Every writer of a suite's nodes holds the suite's lock (``ledger.locks``)."""

from __future__ import annotations

from collections import defaultdict
from datetime import date
from typing import NamedTuple

from django.db import connection
from django.db.models import BooleanField, ExpressionWrapper, Q

from flakeboard import rules
from ledger.audit import bump_ledger_revision
from ledger.models import Node, Suite, text_key
from ledger.selectors import tier_rule_specs
from web.bulk import insert_plain, plain_rows, update_pks

CHUNK = 5000  # ids per IN list: far under SQLite's variable limit (32,766)
INSERT_CHUNK = 10_000  # rows per insert statement or COPY


def insert_rows(model, attnames, rows: list[tuple]) -> None:
    """``rows`` inserted into ``model``'s table, ``INSERT_CHUNK`` a statement."""
    for start in range(0, len(rows), INSERT_CHUNK):
        insert_plain(model, attnames, rows[start : start + INSERT_CHUNK])


class SeenNode(NamedTuple):
    """A node as an upload needs it: read as plain values, not as a model instance."""

    pk: int
    stated_tier: int | None
    never_seen: bool  # by any upload: quarantined by hand only
    seen_today: bool | None


NODE_VALUES = ("nodeid", "pk", "stated_tier", "never_seen", "seen_today")
NODE_COLUMNS = ("suite_id", "nodeid", "key", "stated_tier", "tier", "first_seen", "last_seen")



def fetch_nodes(suite: Suite, nodeids: list[str], today: date) -> dict[str, SeenNode]:
    """The stored nodes among ``nodeids``: by key for a few, and for many (most of a suite,
    as a CI upload is) the suite's nodes in one read, kept when named."""
    nodes = Node.objects.filter(suite=suite).annotate(
        never_seen=ExpressionWrapper(Q(first_seen__isnull=True), output_field=BooleanField()),
        seen_today=ExpressionWrapper(Q(last_seen=today), output_field=BooleanField()),
    )
    if len(nodeids) <= CHUNK:
        found = plain_rows(nodes.named(*nodeids).values_list(*NODE_VALUES), CHUNK)
        return {nodeid: SeenNode(*values) for nodeid, *values in found}
    wanted = set(nodeids)
    return {
        nodeid: SeenNode(*values)
        for nodeid, *values in plain_rows(nodes.values_list(*NODE_VALUES), CHUNK)
        if nodeid in wanted
    }


def nodes_for_upload(suite: Suite, stated: dict[str, int | None], today) -> dict[str, SeenNode]:
    """Every uploaded node id's node, stored: new ones created, all marked seen today, and
    a stated tier 0 or 1 made sticky (re-tiering a node changes the served ledger)."""
    nodeids = sorted(stated)
    existing = fetch_nodes(suite, nodeids, today)
    specs = tier_rule_specs(suite)
    day = connection.ops.adapt_datefield_value(today)
    new_nodes, retiered = [], defaultdict(list)
    for nodeid in nodeids:
        node = existing.get(nodeid)
        if node is None:
            sticky = rules.sticky_tier(None, stated[nodeid])
            new_nodes.append((suite.pk, nodeid, text_key(nodeid), sticky,
                              rules.resolve_tier(nodeid, specs, sticky).tier, day, day))
        elif (sticky := rules.sticky_tier(node.stated_tier, stated[nodeid])) != node.stated_tier:
            retiered[sticky, rules.resolve_tier(nodeid, specs, sticky).tier].append(node.pk)

    # No conflict to ignore: every writer of the suite's nodes holds its lock (lock_suite).
    insert_rows(Node, NODE_COLUMNS, new_nodes)
    existing.update(fetch_nodes(suite, [row[1] for row in new_nodes], today))
    update_pks(Node, sorted(n.pk for n in existing.values() if n.never_seen), first_seen=today)
    update_pks(Node, sorted(n.pk for n in existing.values() if not n.seen_today),
               last_seen=today)
    for (sticky, tier), pks in sorted(retiered.items()):
        update_pks(Node, sorted(pks), stated_tier=sticky, tier=tier)
    if retiered:
        bump_ledger_revision(suite)
    return existing
