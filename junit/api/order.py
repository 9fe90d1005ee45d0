"""POST /api/v1/suites/{suite}/junit/order: the order CI ran a commit's tests in, from the
JUnit files the board holds for it (``junit.order``). ``measure`` asks it to check an
order-dependent test where CI ran it; the ids travel in the body, as for the tiers."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from django.conf import settings
from ninja import Query, Router
from pydantic import Field

from ledger.api.auth import Scope, suite_for_token
from ledger.api.refusing import as_refusal
from ledger.api.tiers import commit_query, node_lookup, parse_nodeids
from ledger.wire import Meta, NodeId
from web.api.bodies import raw_json_body
from web.api.schemas import Answer

from ..order import ci_order
from ..rules import Outcome

router = Router(tags=["junit"])


class OrderFile(Answer):
    id: int
    job: Meta
    attempt: int = Field(ge=1)
    uploaded_at: datetime
    order: list[NodeId] = Field(
        description="Its tests in the order it lists them, up to the last node asked about "
                    "that it holds (that node included).")


class NodeOrder(Answer):
    node: NodeId
    file: int | None = Field(
        description="The file whose order holds it: of the commit's files that hold it "
                    "and are no infrastructure failure, one where it passed, the newest "
                    "first. null when none does.")
    position: int | None = Field(
        ge=0, description="Its index in that file's order: the tests before it are "
                          "order[:position].")
    outcome: Outcome | None = Field(description="Its result in that file (its last attempt).")


class OrderAnswer(Answer):
    suite: str
    commit: Meta
    files: list[OrderFile]
    nodes: list[NodeOrder] = Field(description="One row per node id asked, in their order.")


DESCRIPTION = """\
A JSON list of node ids in the body (at most as many as an upload's rows). For each, the
JUnit file of `commit` that holds it (left aside the files flagged as infrastructure
failures; one where it passed first, then the newest), its index in that file's order and
its outcome there; for each file named, its tests in order. A file lists its tests in the
order they ended: the order they ran in one process; under pytest-xdist, its workers'
interleaved. Raw JUnit rows are kept `JUNIT_RETENTION_DAYS`: an older commit's order is
unknown (`file` null). Nothing is stored. Needs a read (or write) token of the suite."""


@node_lookup(router, "/suites/{suite}/junit/order", OrderAnswer,
             summary="The order CI ran these tests in at a commit, from its JUnit files",
             description=DESCRIPTION)
def junit_order(
    request,
    suite: str,
    commit: Annotated[str, Query(min_length=1, description="The commit CI ran.")],
):
    owned = suite_for_token(request, suite, Scope.READ)
    with as_refusal():
        commit = commit_query(commit)
        nodeids = parse_nodeids(raw_json_body(request), settings.UPLOAD_MAX_RECORDS)
    found = ci_order(owned, commit, nodeids)
    return {"suite": owned.slug, "commit": commit,
            "files": [vars(listed) for listed in found.files],
            "nodes": [vars(row) for row in found.nodes]}
