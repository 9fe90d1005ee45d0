"""An upload's nodes: each uploaded node id's node, stored, marked seen, the tier its
upload stated kept beside the tier its rules give it (never instead of it); and the nodes
its rows name besides (a cause's tests), stored unseen. Every writer of a suite's nodes
holds the suite's lock (``ledger.locks``)."""

from __future__ import annotations

from collections import defaultdict
from datetime import date
from typing import NamedTuple

from ledger.models import Node, Suite
from ledger.nodes import evidence_stored, nodes_create, nodes_named
from ledger.selectors import tier_rule_specs
from web.bulk import update_pks


class SeenNode(NamedTuple):
    """A node as an upload needs it: read as plain values, not as a model instance."""

    pk: int
    stated_tier: int | None  # the latest an upload stated, before this one
    tier: int  # by the suite's tier rules: the only tier that decides
    never_seen: bool  # by any upload: quarantined by hand only
    seen_today: bool
    first_commit: str | None  # of its first evidence, before this upload (rules.is_new)


NODE_VALUES = ("pk", "stated_tier", "tier", "first_seen", "last_seen", "first_commit")


def fetch_nodes(suite: Suite, nodeids: list[str], today: date) -> dict[str, SeenNode]:
    """The stored nodes among ``nodeids``, as an upload needs them: its days as both
    drivers give a date column, a date."""
    return {nodeid: SeenNode(pk, stated, tier, first_seen is None, last_seen == today, first)
            for nodeid, (pk, stated, tier, first_seen, last_seen, first)
            in nodes_named(Node.objects.filter(suite=suite), nodeids, NODE_VALUES).items()}


def nodes_for_upload(suite: Suite, stated: dict[str, int | None], today,
                     commit: str) -> dict[str, SeenNode]:
    """Every uploaded node id's node, stored: new ones created, all marked seen today and
    with evidence at ``commit``, and the tier the upload stated for each kept as the node's
    latest stated tier. A stated tier decides nothing (``rules.tier_disagrees``): the
    node's tier, its entries' states and the served ledger stay as the tier rules make
    them."""
    nodeids = sorted(stated)
    existing = fetch_nodes(suite, nodeids, today)
    new_nodes, restated = [], defaultdict(list)
    for nodeid in nodeids:
        node = existing.get(nodeid)
        if node is None:
            new_nodes.append(nodeid)
        elif stated[nodeid] is not None and stated[nodeid] != node.stated_tier:
            restated[stated[nodeid]].append(node.pk)

    nodes_create(suite, new_nodes, tier_rule_specs(suite), stated=stated, seen=today,
                 evidence_at=commit)
    existing.update(fetch_nodes(suite, new_nodes, today))
    evidence_stored([n.pk for n in existing.values() if n.first_commit is None], commit)
    update_pks(Node, sorted(n.pk for n in existing.values() if n.never_seen), first_seen=today)
    update_pks(Node, sorted(n.pk for n in existing.values() if not n.seen_today),
               last_seen=today)
    for tier, pks in sorted(restated.items()):
        update_pks(Node, sorted(pks), stated_tier=tier)
    return existing


def named_nodes_create(suite: Suite, nodeids: set[str]) -> None:
    """The nodes an upload names without measuring them (an order-dependent test's cause)
    that the suite does not know yet, created so that each has a page to link to. As a
    JUnit file's are: with their tier, seen by no gate upload, outside the test set."""
    if not nodeids:
        return
    new = nodeids - nodes_named(Node.objects.filter(suite=suite), nodeids, ("pk",)).keys()
    if new:
        nodes_create(suite, sorted(new), tier_rule_specs(suite))
