"""PUT /api/v1/suites/{suite}/codeowners: CI pushes the repository's CODEOWNERS, which gives
each node its default owners (issue 20). The body is the file as it is, text/plain; it is
checked whole, each refused line named, before it replaces the suite's file."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from ninja import Router, Schema
from pydantic import Field

from ledger.api.auth import Scope, suite_for_token
from web.api.bodies import raw_body
from web.api.errors import ApiError, ErrorOut

from ..codeowners import codeowners_set

router = Router(tags=["ledger"])
TEXT_TYPES = ("text/plain",)


class CodeownersAnswer(Schema):
    suite: str
    rules: int = Field(ge=0, description="How many rules (lines with a pattern) the file holds.")
    owners: int = Field(ge=0, description="How many distinct owners and teams it names.")


def _refusal(exc: ValidationError) -> ApiError:
    problems = getattr(exc, "problems", None)
    if problems is None:
        message = " ".join(exc.messages)
        code = exc.error_dict["codeowners"][0].code if hasattr(exc, "error_dict") else None
        return ApiError(413 if code == "too_large" else 422, code or "invalid", message)
    details = [{"row": p.line, "field": "line", "code": "invalid_line", "message": p.message}
               for p in problems]
    return ApiError(422, "validation_failed", str(problems[0]), details)


@router.put(
    "/suites/{suite}/codeowners",
    response={200: CodeownersAnswer, 400: ErrorOut, 401: ErrorOut, 403: ErrorOut,
              413: ErrorOut, 415: ErrorOut, 422: ErrorOut},
    summary="Set the suite's CODEOWNERS",
    description=(
        "The repository's CODEOWNERS file as it is (Content-Type: text/plain, UTF-8; an "
        "empty body removes it). GitHub's rules: the last matching pattern wins; a pattern "
        "with no owners leaves its paths unowned. A node's default owners are those of its "
        "path (the node id up to `::`). Refused whole when a line does not parse: each "
        "detail's `row` is the line's number, from 1. Needs a write token of the suite."
    ),
    openapi_extra={"requestBody": {
        "required": True,
        "description": "The CODEOWNERS file.",
        "content": {kind: {"schema": {"type": "string"}} for kind in TEXT_TYPES},
    }},
)
def codeowners(request, suite: str):
    suite = suite_for_token(request, suite, Scope.WRITE)
    body = raw_body(request, accepts=lambda kind: kind in TEXT_TYPES, expected="text/plain")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(400, "invalid_text", f"The body is not UTF-8 text ({exc.reason}).") from None
    try:
        parsed = codeowners_set(suite=suite, text=text, actor=request.auth.label)
    except ValidationError as exc:
        raise _refusal(exc) from None
    return {"suite": suite.slug, "rules": len(parsed), "owners": len(parsed.owners)}
