"""POST /api/v1/suites/{suite}/tiers: each node id's tier by the suite's tier rules, and the
rule that decided it. CI asks before it measures tier 2 (``flakeboard_ci.py gate
--measure``); the ids travel in the body, since thousands of them do not fit a URL. A
lookup stores nothing."""

from __future__ import annotations

from typing import Annotated

from django.conf import settings
from ninja import Query, Router, Schema
from pydantic import Field, TypeAdapter, ValidationError

from flakeboard import rules
from ledger.api.auth import Scope, suite_for_token
from web.api.bodies import raw_json_body
from web.api.errors import ErrorOut
from web.api.openapi import json_body

from .. import refusals
from ..selectors import tiers_and_births
from ..wire import Commit, NodeId
from .refusing import as_refusal

router = Router(tags=["ledger"])
# A lookup's refusals: its body unreadable (400), no or another suite's token (401, 403),
# too many nodes (413), not JSON (415), a node id refused (422).
LOOKUP_REFUSALS = (400, 401, 403, 413, 415, 422)

NodeIds = TypeAdapter(list[NodeId])
CommitQuery = TypeAdapter(Commit)


def commit_query(commit: str) -> str:
    """A commit given in the query, read as an upload's is (its canonical form, so that
    ``ABC123`` asks of the commit stored as ``abc123``): UploadInvalid naming the field
    ``commit`` when it is not a label (too long, a control character), refused as any
    query parameter is (``invalid_request``)."""
    try:
        return CommitQuery.validate_python(commit)
    except ValidationError as exc:
        found = [refusals.WireProblem(p.code, p.message, None, "commit")
                 for p in refusals.problems(exc, limit=refusals.MAX_ERRORS)]
        raise refusals.UploadInvalid("invalid_request", found) from None


class NodeTier(Schema):
    node: str
    tier: int = Field(ge=0, le=2)
    rule: str | None = Field(
        description="The glob of the tier rule that decided the tier; null when no rule "
        "matched (tier 2)."
    )
    stated: bool = Field(description="Always false: a tier an upload states for a node is "
                                     "stored and flagged (tier_disagrees), and never decides "
                                     "its tier. Kept for the clients that read it.")
    new: bool | None = Field(
        description="With `commit`: the node is new at that commit, the board holding no "
        "evidence of it (measurement, signal record, JUnit result) from an earlier commit "
        "(docs/new-tests.md). null without `commit`."
    )


class NewTestGuard(Schema):
    runs: int = Field(description="How many times gate --measure runs each new tier-2 test "
                                  "(fewer when slow, never fewer than 3).")
    share: float = Field(description="When more than this share of a selection is new, only "
                                     "the first new tests up to it are measured.")


class TiersAnswer(Schema):
    suite: str
    tiers: list[NodeTier] = Field(description="One row per node id asked, in their order.")
    new_tests: NewTestGuard = Field(description="The suite's new-test guard "
                                                "(docs/new-tests.md), set on its settings page.")
    measure_budget: int = Field(description="The seconds gate --measure may spend on the "
                                            "tier-2 tests a patch calls for (SPEC 2.4c), set "
                                            "on the suite's settings page.")


def parse_nodeids(body: bytes, max_records: int) -> list[str]:
    """The body's node ids, whole; UploadInvalid naming the row of each bad one."""
    data = refusals.load_list(body, "node ids", max_records)
    try:
        return NodeIds.validate_python(data)
    except ValidationError as exc:
        found = [
            refusals.WireProblem(p.code, p.message, p.row, "node")
            for p in refusals.problems(exc, limit=refusals.MAX_ERRORS)
        ]
        raise refusals.UploadInvalid("validation_failed", found, exc.error_count()) from None


def node_lookup(router: Router, path: str, answer: type, *, summary: str, description: str,
                nodes: str = "The node ids, as pytest prints them."):
    """An endpoint that answers of the JSON list of node ids its body holds (the tiers, CI's
    order, the failures' labels, the diagnoses), registered on ``router``: its answer,
    the refusals of a body, and the body as the OpenAPI document shows it."""
    return router.post(
        path, response={200: answer, **dict.fromkeys(LOOKUP_REFUSALS, ErrorOut)},
        summary=summary, description=description,
        openapi_extra=json_body(list[NodeId], description=nodes))


def nodeids_asked(request, max_records: int) -> list[str]:
    """A lookup's body, a JSON list of node ids, whole; refused as the API refuses."""
    with as_refusal():
        return parse_nodeids(raw_json_body(request), max_records)


@node_lookup(
    router, "/suites/{suite}/tiers", TiersAnswer,
    summary="The tiers of these nodes, and the rules that decided them",
    description=(
        "A JSON list of node ids in the body (at most as many as an upload's rows); each "
        "gets its tier by the suite's tier rules (tier 0 rules win over tier 1, tier 1 over "
        "tier 2; no rule: tier 2), with the glob of the rule that decided it: a tier an "
        "upload stated for the node never counts. With `?commit=`, each also says "
        "whether the node is `new` at that commit. Nothing is stored. Needs a read "
        "(or write) token of the suite."
    ),
)
def tiers(
    request,
    suite: str,
    commit: Annotated[str, Query(max_length=rules.META_MAX_LENGTH,
                                 description="Say of each node whether it is new at this "
                                             "commit.")] = "",
):
    suite = suite_for_token(request, suite, Scope.READ)
    with as_refusal():
        commit = commit_query(commit)
        nodeids = parse_nodeids(raw_json_body(request), settings.UPLOAD_MAX_RECORDS)
    resolved, births = tiers_and_births(suite, nodeids)
    return {"suite": suite.slug, "tiers": [
        {"node": nodeid, "tier": int(r.tier), "rule": r.rule.glob if r.rule else None,
         "stated": False, "new": rules.is_new(first, commit) if commit else None}
        for nodeid, r, first in zip(nodeids, resolved, births, strict=True)
    ], "new_tests": {"runs": suite.new_test_runs, "share": suite.new_test_share},
        "measure_budget": suite.measure_budget}
