"""POST /api/v1/suites/{suite}/failures: why each of these failed nodes failed, as far as
the board knows (SPEC 2.4c), for a gate that judges locally and uploads nothing. The same
objects a verdict batch's failed rows carry, from the same service (``board.failures``)."""

from __future__ import annotations

from django.utils import timezone
from ninja import Router
from pydantic import Field

from ledger.api.auth import Scope, suite_for_token
from ledger.api.tiers import node_lookup, nodeids_asked
from ledger.wire import NodeId
from runs.api.schemas import FailureOut
from web.api.schemas import Answer

from ..failures import EXPLAINED_MAX, failures_explained

router = Router(tags=["uploads"])


class NodeFailureOut(FailureOut):
    node: NodeId


class FailuresAnswer(Answer):
    suite: str
    nodes: list[NodeFailureOut] = Field(description="One row per node id asked, in their order.")


DESCRIPTION = f"""\
A JSON list of failed node ids in the body (at most {EXPLAINED_MAX}). For each, its label
and the one line the CI client prints under it, with the evidence that decided them, as a
verdict batch's failed rows carry them: `quarantined` (a live ledger entry), `known_flaky`
(flaky evidence in the last 30 days: its rate, Wilson bound, first day and diagnosis),
`failing_on_default` (its last JUnit results on the suite's default branch failed) or
`new_failure` (none of these: it passes there, or the board holds no result of it there).
A node the board does not know is a new failure. Nothing is stored. Needs a read (or
write) token of the suite."""


@node_lookup(router, "/suites/{suite}/failures", FailuresAnswer,
             summary="Why these failed tests failed: each one's label and line",
             description=DESCRIPTION, nodes="The failed node ids, as pytest prints them.")
def failures(request, suite: str):
    owned = suite_for_token(request, suite, Scope.READ)
    nodeids = nodeids_asked(request, EXPLAINED_MAX)
    explained = failures_explained(owned, nodeids, timezone.now().date())
    return {"suite": owned.slug,
            "nodes": [{"node": nodeid, **explained[nodeid]} for nodeid in nodeids]}
