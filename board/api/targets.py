"""GET /api/v1/suites/{suite}/targets: the tests CI should measure next, as a text file."""

from __future__ import annotations

from typing import Annotated

from django.http import HttpResponse
from django.utils import timezone
from ninja import Query, Router
from pydantic import WithJsonSchema

from board.targets import DEFAULT_LIMIT, MAX_LIMIT, measure_targets
from ledger.api.auth import Scope, suite_for_token
from web.api.errors import ApiError, ErrorOut

router = Router(tags=["junit"])

TEXT_FILE = {"200": {
    "description": "One node id a line, ending in a newline; empty when there is nothing "
                   "to measure.",
    "content": {"text/plain": {"schema": {"type": "string"},
                               "example": "tests/test_io.py::test_retry\n"}},
}}


# Read as text, so that only a plain count is taken: "1.0", "+1" or a repeated limit are
# refused, not rounded or the last one kept.
LIMIT_SCHEMA = {"type": "integer", "minimum": 0, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT}
LimitText = Annotated[str, WithJsonSchema(LIMIT_SCHEMA)]


def _limit(request, text: str | None) -> int:
    problem = None
    if len(request.GET.getlist("limit")) > 1:
        problem = "is given more than once"
    elif text is not None and not (text.isascii() and text.isdigit()
                                   and int(text) <= MAX_LIMIT):
        problem = f"must be a whole number from 0 to {MAX_LIMIT}"
    if problem:
        raise ApiError(422, "invalid_request", f"limit {problem}.",
                       [{"field": "limit", "code": "invalid", "message": problem}])
    return DEFAULT_LIMIT if text is None else int(text)


@router.get(
    "/suites/{suite}/targets",
    response={401: ErrorOut, 403: ErrorOut, 422: ErrorOut},
    openapi_extra={"responses": TEXT_FILE},
    summary="The tests to measure next, as flake_targets.txt",
    description=(
        "`text/plain`, one node id a line: first the nodes marked to measure (the "
        "flaky-tests page's Measure), then the nodes that flipped between gate attempts at "
        "one commit (failed in one attempt, passed in another) and the tests with the most "
        "flaky failures in JUnit files, over the last 30 days, that no measurement has "
        "found within budget since they were last flaky, at most `limit` of them (default "
        f"{DEFAULT_LIMIT}). Flips come first: each blocked a gate. Of those, the tests "
        "the board cannot yet say why they are flaky (no diagnosis, or `unknown`: "
        "[diagnosis](diagnosis.md)) come first, so that measuring runs their experiments. "
        "Save it "
        "as `flake_targets.txt` for the budget script or `flakeboard_ci.py measure`. Needs "
        "a read (or write) token of the suite."
    ),
)
def targets(
    request,
    suite: str,
    limit: Annotated[LimitText | None, Query(description=(
        "How many flipped or flaky tests to add after the marked ones."))] = None,
):
    suite = suite_for_token(request, suite, Scope.READ)
    nodeids = measure_targets(suite, timezone.now().date(), _limit(request, limit))
    response = HttpResponse("".join(f"{nodeid}\n" for nodeid in nodeids),
                            content_type="text/plain; charset=utf-8")
    response["Cache-Control"] = "no-store"
    return response
