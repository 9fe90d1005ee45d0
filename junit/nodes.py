"""A JUnit file's testcases as the suite's nodes: each case's node id settled
(``junit.nodeids``), and the nodes the suite does not know yet created.

**A node the suite knows.** A pytest testcase whose id is a guess (no ``file`` that fits)
takes the id of a node the suite knows from pytest itself, a node a gate upload (a
report or signal records) or a quarantine entry named, when pytest would write that node
with the testcase's classname and name. A node an earlier JUnit file created is itself a
guess and decides nothing: once a report names the true id, later files map to it, and the
first of them merges the guess into it (``junit.merge``).

**JUnit nodes do not join the known nodes.** A node first seen in a JUnit file is
created with its tier (the suite's tier rules) and no ``first_seen``/``last_seen``: those
are the days a gate upload named it. The test set counts JUnit's tests another way: the
default branch's most recent complete CI run (``ledger.test_set``, docs/test-set.md), one
commit's, which no file of another branch can pad.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from functools import lru_cache

from django.db.models import Exists, Max, OuterRef, Q

from ledger.models import Node, QuarantineEntry, Suite, written_key
from ledger.nodes import CHUNK, evidence_stored, nodes_create, nodes_named
from ledger.selectors import tier_rule_specs
from web.bulk import one_parameter, plain_rows

from .merge import merge_guess
from .parse import IDS_KEPT, Case

# A suite's tests are the same from one upload to the next: the keys of their written
# forms (a SHA-256 each) are kept for the process's later uploads, as their ids are
# (``junit.parse``).
_written_key = lru_cache(maxsize=IDS_KEPT)(written_key)

# Nodes the suite knows from pytest itself: named by a gate upload or by an entry.
VOUCHED = Q(first_seen__isnull=False) | Exists(QuarantineEntry.objects.filter(node=OuterRef("pk")))


def _known(suite: Suite, nodeids: Iterable[str], *, after: int = 0) -> dict[str, int]:
    """The suite's nodes among ``nodeids`` (with a primary key over ``after``), by id:
    their primary keys."""
    nodes = Node.objects.filter(suite=suite, pk__gt=after)
    return {nodeid: pk for nodeid, (pk,) in nodes_named(nodes, nodeids, ("pk",)).items()}


def _vouched_fits(suite: Suite, forms: Iterable[str]) -> tuple[dict[str, list[str]], dict]:
    """The suite's vouched nodes that pytest writes in one of ``forms`` (keys of written
    forms, ``Node.written_key``, indexed), by that key, each list in id order; and each of
    them by id, (primary key, first commit). Only the nodes the cases could be are read,
    however many the suite knows."""
    keys = set(forms)
    fits, read = defaultdict(list), {}
    if not keys:
        return fits, read
    vouched = Node.objects.filter(VOUCHED, suite=suite, written_key__in=one_parameter(keys))
    rows = vouched.order_by().values_list("nodeid", "written_key", "pk", "first_commit")
    for nodeid, key, pk, first in plain_rows(rows, CHUNK):
        fits[key].append(nodeid)
        read[nodeid] = (pk, first)
    for found in fits.values():  # read unordered: few forms have more than one id
        if len(found) > 1:
            found.sort()
    return fits, read


def _settled(case: Case, found: list[str] | None) -> str:
    """The case's node id, given the vouched nodes pytest writes as it (rule 2)."""
    if not found:
        return case.nodeid
    return case.nodeid if case.nodeid in found else found[0]


def _merge_guesses(suite: Suite, settled: dict[str, str]) -> bool:
    """Merge each guess (a node only JUnit named) into the node its testcase now maps to
    ({guess: true id}): one query when there is none. Whether any was merged."""
    if not settled:
        return False
    guesses = Node.objects.filter(suite=suite).exclude(VOUCHED)
    found = nodes_named(guesses, settled, ("pk",))
    if not found:
        return False
    into = _known(suite, [settled[guess] for guess in found])
    for guess, (pk,) in found.items():
        merge_guess(suite.pk, pk, into[settled[guess]])
    return True


def nodes_for_cases(suite: Suite, cases: list[Case], commit: str) -> list[tuple[int, str]]:
    """Each case's node, (primary key, node id), in the cases' order; new nodes created,
    and every one with evidence at ``commit`` (``rules.is_new``)."""
    forms = [_written_key(*case.written) if case.written else None for case in cases]
    fits, read = _vouched_fits(suite, filter(None, forms))
    chosen = [_settled(case, fits.get(form)) for case, form in zip(cases, forms, strict=True)]
    if _merge_guesses(suite, {case.nodeid: nodeid
                              for case, nodeid in zip(cases, chosen, strict=True)
                              if nodeid != case.nodeid}):
        read = {}  # a merge may give a true node its guess's first commit: read again
    wanted = set(chosen)
    found = {nodeid: read[nodeid] for nodeid in wanted & read.keys()}
    if unread := wanted - found.keys():  # guesses and new nodes: few, once known
        found.update(nodes_named(Node.objects.filter(suite=suite), unread,
                                 ("pk", "first_commit")))
    known = {nodeid: pk for nodeid, (pk, _) in found.items()}
    evidence_stored([pk for pk, first in found.values() if first is None], commit)
    new = sorted(set(chosen) - known.keys())
    if new:
        # Every writer of the suite's nodes holds its lock: the nodes made now are the
        # suite's nodes with a key over the largest before.
        before = Node.objects.aggregate(last=Max("pk"))["last"] or 0
        nodes_create(suite, new, tier_rule_specs(suite), evidence_at=commit)
        known.update(_known(suite, new, after=before))
    return [(known[nodeid], nodeid) for nodeid in chosen]
