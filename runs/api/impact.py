"""The suite's impact map (SPEC 2.4c): PUT /api/v1/suites/{suite}/impact replaces it with
the source files each test executed (``gate --record-impact`` on the default branch), and
POST /api/v1/suites/{suite}/impact/nodes answers the tests that execute any of a pull
request's changed files (``gate --measure``)."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.utils import timezone
from ninja import Router, Schema
from pydantic import Field

from ledger.api.auth import Scope, suite_for_token
from ledger.api.refusing import as_refusal
from ledger.refusals import Code, UploadInvalid, WireProblem, load_list
from web.api.bodies import raw_json_body
from web.api.errors import BODY_ERRORS
from web.api.openapi import json_body

from ..impact import (
    impact_map_set,
    impact_summary,
    map_described,
    parse_impact,
    path_problem,
    tests_executing,
)

router = Router(tags=["impact"])


class ImpactMapOut(Schema):
    commit: str = Field(description="The commit the map was recorded at (blank: not said).")
    recorded_at: datetime
    nodes: int = Field(ge=0, description="How many tests the map holds.")
    paths: int = Field(ge=0, description="How many distinct source files it names.")


class ImpactMapIn(Schema):
    commit: str = Field("", description="The commit the map was recorded at.")
    map: dict[str, list[str]] = Field(
        description="Each test's node id and the source files (paths relative to the "
                    "repository's root) its setup, call and teardown executed.")


class ImpactNode(Schema):
    node: str
    paths: list[str] = Field(description="The asked paths the test executed, sorted.")


class ImpactNodesAnswer(Schema):
    suite: str
    map: ImpactMapOut | None = Field(description="The suite's map; null when none was "
                                                 "recorded (then no test is named).")
    nodes: list[ImpactNode] = Field(description="The tests that executed any asked path, "
                                                "sorted by node id.")


class ImpactStored(ImpactMapOut):
    suite: str


@router.put(
    "/suites/{suite}/impact",
    response={200: ImpactStored, **BODY_ERRORS},
    summary="Replace the suite's impact map",
    description=(
        "`{\"commit\": ..., \"map\": {node id: [path, ...]}}`: the source files each test "
        "executed, as `gate --record-impact` records them. Checked whole (each refused "
        "entry's `row` is its index in the map, its `field` `node` or `paths`), then it "
        "replaces the suite's map in one transaction: the board keeps the latest map only. "
        "Needs a write token of the suite."
    ),
    openapi_extra=json_body(ImpactMapIn, description="The impact map."),
)
def impact_put(request, suite: str):
    suite = suite_for_token(request, suite, Scope.WRITE)
    with as_refusal():
        upload = parse_impact(raw_json_body(request), settings.UPLOAD_MAX_RECORDS)
    stored = impact_map_set(suite=suite, upload=upload, now=timezone.now())
    return {"suite": suite.slug, **map_described(stored)}


def parse_paths(body: bytes, max_paths: int) -> list[str]:
    """The body's paths, whole; UploadInvalid naming the row of each refused one."""
    data = load_list(body, "paths", max_paths)
    found = [WireProblem(Code.INVALID_VALUE, f"path {why}", row, "path")
             for row, path in enumerate(data) if (why := path_problem(path)) is not None]
    if found:
        raise UploadInvalid("validation_failed", found)
    return data


@router.post(
    "/suites/{suite}/impact/nodes",
    response={200: ImpactNodesAnswer, **BODY_ERRORS},
    summary="The tests that execute these files",
    description=(
        "A JSON list of paths (relative to the repository's root, as `git diff` names "
        "them; at most as many as an upload's rows) in the body; the answer names each "
        "test of the suite's impact map that executed any of them, with which. Nothing is "
        "stored. Needs a read (or write) token of the suite."
    ),
    openapi_extra=json_body(list[str], description="The changed paths."),
)
def impact_nodes(request, suite: str):
    suite = suite_for_token(request, suite, Scope.READ)
    with as_refusal():
        paths = parse_paths(raw_json_body(request), settings.UPLOAD_MAX_RECORDS)
    found = tests_executing(suite, paths)
    return {"suite": suite.slug, "map": impact_summary(suite),
            "nodes": [{"node": node, "paths": executed} for node, executed in found.items()]}
