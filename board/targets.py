"""The measurement targets file (``GET /api/v1/suites/{suite}/targets``): what CI should
measure next, one node id a line.

First the nodes the suite's owners marked to measure, in the order they were marked; then,
in the order the flaky-tests page lists them (``board.flaky``), the nodes that flipped
between gate attempts over the last 30 days, the new tests flaky at birth over those days,
and the tests most often flaky in JUnit files over those days, each left out once a
measurement has found it within budget since it was last seen flaky that way: a test
measured clean, then flaky again, comes back.

Flips and births rank before the JUnit tests, whatever their counts: each failed a gate
whose answer said to measure the node, and a retry will not change that verdict. Among the
JUnit tests alone one flip would rank low, past the limit, and never be measured.

Of those chosen, the tests the board cannot yet say why they are flaky (no diagnosis, or
``unknown``: SPEC 2.4d) come first, each part in that order: measuring them runs the
diagnosis's experiments.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time

from django.db.models import OuterRef, Subquery

from flakeboard import rules
from junit.selectors import Window
from ledger.measure_targets import marked_nodeids
from ledger.models import Node, Suite
from runs.models import Measurement

from .diagnosis import node_diagnoses
from .flaky import flaky_sources

DEFAULT_LIMIT = 20
MAX_LIMIT = 1000
BATCH = 200


def _measured_within_budget(ranked: list[dict]) -> set[int]:
    """Of ranked rows (``node_id``, ``last_flaky``), the nodes whose latest measurement
    on or after their last flaky day found them within budget."""
    if not ranked:
        return set()
    since = datetime.combine(min(row["last_flaky"] for row in ranked), time.min, UTC)
    last_flaky = {row["node_id"]: row["last_flaky"] for row in ranked}
    latest = {}
    for node, at, reason in Measurement.objects.filter(
            node_id__in=list(last_flaky), created_at__gte=since).order_by(
            "node_id", "-created_at", "-pk").values_list("node_id", "created_at", "reason"):
        if node not in latest and at.date() >= last_flaky[node]:
            latest[node] = reason
    return {node for node, reason in latest.items() if reason == rules.Reason.WITHIN_BUDGET}


def _not_measured(ranking, chosen: set[str], limit: int) -> list[str]:
    """At most ``limit`` node ids of ``ranking`` (values rows of ``node_id`` and
    ``last_flaky``), in its order, neither ``chosen`` nor measured within budget since."""
    found: list[str] = []
    # Each row's node id read by its key, for the batch alone: joined to the nodes, the
    # ranking read the node of every flaky test before it sorted them (2,000 for a batch
    # of 200 in B10's largest suite).
    ranking = ranking.values("node_id", "last_flaky", nodeid=Subquery(
        Node.objects.filter(pk=OuterRef("node_id")).values("nodeid")))
    start = 0
    while len(found) < limit:
        batch = list(ranking[start:start + BATCH])
        done = _measured_within_budget(batch)
        for row in batch:
            if row["node_id"] not in done and row["nodeid"] not in chosen:
                found.append(row["nodeid"])
                chosen.add(row["nodeid"])
                if len(found) == limit:
                    break
        if len(batch) < BATCH:
            break
        start += BATCH
    return found


def undiagnosed_first(suite: Suite, nodeids: list[str], today: date) -> list[str]:
    """The node ids, those the board cannot yet say why they are flaky (no diagnosis, or
    ``unknown``) first, each part in its order: measuring them runs the diagnosis's
    experiments (SPEC 2.4d)."""
    found = node_diagnoses(suite, nodeids, today=today)

    def diagnosed(nodeid: str) -> bool:
        diagnosis = found.get(nodeid)
        return diagnosis is not None and diagnosis.category is not rules.Category.UNKNOWN

    return sorted(nodeids, key=diagnosed)


def measure_targets(suite: Suite, today: date, limit: int = DEFAULT_LIMIT) -> list[str]:
    """The marked nodes, then at most ``limit`` flipped or flaky ones not yet measured
    within budget, those with no diagnosis first."""
    marked = marked_nodeids(suite)
    chosen = set(marked)
    found: list[str] = []
    for ranking in flaky_sources(suite, Window(today)):
        found += _not_measured(ranking, chosen, limit - len(found))
    return marked + undiagnosed_first(suite, found, today)
