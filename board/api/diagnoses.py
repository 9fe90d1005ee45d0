"""POST /api/v1/suites/{suite}/diagnoses: why each of these tests is flaky (SPEC 2.4d), the
same object a report's measurement rows carry, from the same service (``board.diagnosis``):
each node's latest measurement and what CI's JUnit files show of it."""

from __future__ import annotations

from django.utils import timezone
from ninja import Router
from pydantic import Field

from ledger.api.auth import Scope, suite_for_token
from ledger.api.tiers import node_lookup, nodeids_asked
from ledger.wire import NodeId
from runs.api.schemas import DiagnosisOut
from runs.diagnosed import DIAGNOSED_MAX
from web.api.schemas import Answer

from ..diagnosis import node_diagnoses

router = Router(tags=["uploads"])


class NodeDiagnosisOut(Answer):
    node: NodeId
    diagnosis: DiagnosisOut | None = Field(
        description="null for a node the board does not know.")


class DiagnosesAnswer(Answer):
    suite: str
    nodes: list[NodeDiagnosisOut] = Field(
        description="One row per node id asked, in their order.")


DESCRIPTION = f"""\
A JSON list of node ids in the body (at most {DIAGNOSED_MAX}). For each, why it is flaky:
its `category` (order_dependent, seeded, repeat_unsafe, timing, external, job_specific,
ci_only, or unknown), the `evidence` that decided it, strongest first, each a sentence with
its numbers, the reproduction `command` where one exists, and what was `tried`; from its
latest measurement (its classification and the client's experiments) and what CI's JUnit
files show of it (per job, at the commits it was measured at, its failure signatures),
infrastructure failures left out ([diagnosis](diagnosis.md)). The same object a report's
measurement rows carry. A node the board does not know has none (null). Nothing is stored.
Needs a read (or write) token of the suite."""


@node_lookup(router, "/suites/{suite}/diagnoses", DiagnosesAnswer,
             summary="Why these tests are flaky: each one's diagnosis",
             description=DESCRIPTION)
def diagnoses(request, suite: str):
    owned = suite_for_token(request, suite, Scope.READ)
    nodeids = nodeids_asked(request, DIAGNOSED_MAX)
    found = node_diagnoses(owned, nodeids, today=timezone.now().date())
    return {"suite": owned.slug, "nodes": [
        {"node": nodeid, "diagnosis": None if nodeid not in found else found[nodeid].answer()}
        for nodeid in nodeids]}
