"""The order CI ran a commit's tests in, as its JUnit files list them: what ``measure``
asks for to check a test where CI ran it. A lookup over the raw rows, which are kept
JUNIT_RETENTION_DAYS; it stores nothing.

For each node asked about, the newest file of the commit that holds it (a file where it
passed first), left aside the infrastructure failures; for each file chosen, its tests in
order, up to the last node asked about that it holds. A file lists its tests in the order
they ended: one process's order, or under pytest-xdist its workers' interleaved (docs/api.md
says what that means for the check)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from ledger.models import Node, Suite

from .models import CaseResult, JUnitFile
from .rules import Outcome


@dataclass
class OrderFile:
    id: int
    job: str
    attempt: int
    uploaded_at: datetime
    order: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class NodeOrder:
    node: str
    file: int | None = None
    position: int | None = None  # its index in the file's order: the tests before it
    outcome: str | None = None


@dataclass
class CiOrder:
    files: list[OrderFile]
    nodes: list[NodeOrder]


def _preference(row: dict, rank: dict[int, int]) -> tuple[bool, int]:
    """A file where the node passed first, then the newest."""
    return row["outcome"] != Outcome.PASSED, rank[row["file_id"]]


def ci_order(suite: Suite, commit: str, nodeids: list[str]) -> CiOrder:
    files = {f.pk: f for f in JUnitFile.objects.filter(
        suite=suite, commit=commit, infrastructure_reason="").only(
        "id", "job", "attempt", "created_at")}
    rank = {pk: index for index, pk in enumerate(
        sorted(files, key=lambda pk: (files[pk].created_at, pk), reverse=True))}
    ids = dict(Node.objects.filter(suite=suite).named(*nodeids).values_list("nodeid", "pk"))
    best: dict[int, dict] = {}
    if files and ids:
        for row in CaseResult.objects.filter(file_id__in=list(files),
                                             node_id__in=list(ids.values())).values(
                "file_id", "node_id", "position", "outcome"):
            held = best.get(row["node_id"])
            if held is None or _preference(row, rank) < _preference(held, rank):
                best[row["node_id"]] = row
    last: dict[int, int] = {}
    for row in best.values():
        last[row["file_id"]] = max(last.get(row["file_id"], -1), row["position"])
    chosen: dict[int, OrderFile] = {}
    index: dict[int, dict[int, int]] = {}  # file -> case position -> index in its order
    for pk in sorted(last, key=rank.get):
        junit = files[pk]
        listed = OrderFile(junit.pk, junit.job, junit.attempt, junit.created_at)
        index[pk] = {}
        for position, name in CaseResult.objects.filter(
                file_id=pk, position__lte=last[pk]).order_by("position").values_list(
                "position", "node__nodeid"):
            index[pk][position] = len(listed.order)
            listed.order.append(name)
        chosen[pk] = listed
    nodes = []
    for nodeid in nodeids:
        row = best.get(ids.get(nodeid, -1))
        if row is None:
            nodes.append(NodeOrder(nodeid))
            continue
        nodes.append(NodeOrder(nodeid, row["file_id"], index[row["file_id"]][row["position"]],
                               row["outcome"]))
    return CiOrder(list(chosen.values()), nodes)
