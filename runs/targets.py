"""The measurement targets file (``GET /api/v1/suites/{suite}/targets``): what CI should
measure next, one node id a line.

First the nodes the suite's owners marked to measure, in the order they were marked; then
the tests most often flaky in JUnit files over the last 30 days (``junit.selectors``) that
no measurement has yet found within budget since they were last seen flaky: a test
measured clean, then flaky again, comes back.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time

from flakeboard import rules
from junit.selectors import Window, flaky_ranking
from ledger.measure_targets import marked_nodeids
from ledger.models import Suite

from .models import Measurement

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


def measure_targets(suite: Suite, today: date, limit: int = DEFAULT_LIMIT) -> list[str]:
    """The marked nodes, then at most ``limit`` flaky ones not yet measured within budget."""
    marked = marked_nodeids(suite)
    chosen = set(marked)
    flaky: list[str] = []
    ranking = flaky_ranking(suite, Window(today)).values("node_id", "node__nodeid",
                                                         "last_flaky")
    start = 0
    while len(flaky) < limit:
        batch = list(ranking[start:start + BATCH])
        done = _measured_within_budget(batch)
        for row in batch:
            if row["node_id"] not in done and row["node__nodeid"] not in chosen:
                flaky.append(row["node__nodeid"])
                if len(flaky) == limit:
                    break
        if len(batch) < BATCH:
            break
        start += BATCH
    return marked + flaky
