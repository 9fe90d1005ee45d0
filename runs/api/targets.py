"""GET /api/v1/suites/{suite}/targets: the tests CI should measure next, as a text file."""

from __future__ import annotations

from typing import Annotated

from django.http import HttpResponse
from django.utils import timezone
from ninja import Query, Router

from web.api.auth import Scope, suite_for_token
from web.api.errors import ErrorOut

from ..targets import DEFAULT_LIMIT, MAX_LIMIT, measure_targets

router = Router(tags=["junit"])

TEXT_FILE = {"200": {
    "description": "One node id a line, ending in a newline; empty when there is nothing "
                   "to measure.",
    "content": {"text/plain": {"schema": {"type": "string"},
                               "example": "tests/test_io.py::test_retry\n"}},
}}


@router.get(
    "/suites/{suite}/targets",
    response={401: ErrorOut, 403: ErrorOut, 422: ErrorOut},
    openapi_extra={"responses": TEXT_FILE},
    summary="The tests to measure next, as flake_targets.txt",
    description=(
        "`text/plain`, one node id a line: first the nodes marked to measure (the "
        "flaky-tests page's Measure), then the tests with the most flaky failures in JUnit "
        "files over the last 30 days that no measurement has found within budget since "
        f"they were last flaky, at most `limit` of them (default {DEFAULT_LIMIT}). Save it "
        "as `flake_targets.txt` for the budget script or `flakeboard_ci.py measure`. Needs "
        "a read (or write) token of the suite."
    ),
)
def targets(
    request,
    suite: str,
    limit: Annotated[int, Query(ge=0, le=MAX_LIMIT, description=(
        "How many flaky tests to add after the marked ones."))] = DEFAULT_LIMIT,
):
    suite = suite_for_token(request, suite, Scope.READ)
    nodeids = measure_targets(suite, timezone.now().date(), limit)
    response = HttpResponse("".join(f"{nodeid}\n" for nodeid in nodeids),
                            content_type="text/plain; charset=utf-8")
    response["Cache-Control"] = "no-store"
    return response
