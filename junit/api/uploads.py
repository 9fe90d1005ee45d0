"""POST /api/v1/suites/{suite}/junit: a JUnit XML file from a CI job, as passive evidence.

The view reads the body (XML, gzip allowed), hands it to the ingest service and answers
what was stored. Nothing it does changes the gate: no exit code, no ledger change.
"""

from __future__ import annotations

from typing import Annotated

from django.conf import settings
from django.utils import timezone
from ninja import Query, Router, Status

from flakeboard import rules as gate_rules
from ledger.api.auth import Scope, suite_for_token
from ledger.trust import credential_of, signed_of
from web.api.bodies import raw_body
from web.api.errors import ApiError, ErrorOut

from ..answers import junit_answer
from ..ingest import junit_ingest
from ..parse import JUnitInvalid, inflated
from .schemas import JUnitAnswer

router = Router(tags=["junit"])

XML_TYPES = ("application/xml", "text/xml")
# Refusals that are not 422 (a valid document that is not a valid upload).
STATUS = {"invalid_xml": 400, "forbidden_xml": 400, "invalid_gzip": 400, "too_deep": 400,
          "too_large": 413,
          "too_many_records": 413, "too_many_elements": 413, "unsupported_encoding": 415}
ERRORS = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 413: ErrorOut, 415: ErrorOut,
          422: ErrorOut}
DESCRIPTION = """\
A JUnit XML file as a CI job wrote it: pytest (either `junit_family`, with
pytest-rerunfailures' reruns), Maven Surefire (`flakyFailure`, `rerunFailure`), jest-junit,
gotestsum or any JUnit writer; `<testsuites>` or a bare `<testsuite>`. Send it as
`Content-Type: application/xml` (or `text/xml`), optionally with `Content-Encoding: gzip`.

A test is flaky on a commit when one job (`job`, over its `attempt`s and the reruns in its
files) has both passed and failed it. Passing in one job and failing in another is
`differs_by_job`, not flaky. A file with an error outside any test, or in which more than
the suite's share (80% by default) of the tests that ran never passed, is an
`infrastructure` failure: stored, and left out of detection.

A DTD, entities, external references, malformed XML (its line and column named), elements
nested more than 64 deep, a gzip body that is not gzip and a body over the upload limit
once decompressed are refused, and nothing is stored. 201 when stored; 200 for a body and
query uploaded before (`duplicate`).
A file of the suite's default branch adds its tests to that commit's CI run, which sizes
the quarantined share's test set. Once the suite keeps a default-branch-only token, only
that token's files do: another token's file stating the default branch is stored, flagged
`test_set_untrusted`, and never sizes it; and a default-branch-only token's file is the
default branch's (another `branch` is refused, 422; none stated means the default).

Needs a write token. Passive evidence never changes the gate."""


def _is_xml(content_type: str) -> bool:
    return content_type in XML_TYPES or content_type.endswith("+xml")


@router.post(
    "/suites/{suite}/junit",
    response={200: JUnitAnswer, 201: JUnitAnswer, **ERRORS},
    summary="Upload a JUnit XML file: passive flaky-test evidence",
    description=DESCRIPTION,
    openapi_extra={"requestBody": {
        "required": True,
        "description": "A JUnit XML file, as the test runner wrote it.",
        "content": {kind: {"schema": {"type": "string"}} for kind in XML_TYPES},
    }},
)
def upload_junit(
    request,
    suite: str,
    commit: Annotated[str, Query(description="The commit the tests ran on.")],
    branch: Annotated[str, Query(description="The branch.")] = "",
    job: Annotated[str, Query(description="The CI job: one cell of a matrix (another "
                                          "Python, another OS) is another job.")] = "",
    attempt: Annotated[int, Query(
        ge=1, le=gate_rules.COUNT_MAX,
        description="The job's attempt: 2 for its first re-run (with a CI's OIDC token, "
                    "its signed run attempt when this is not given).")] = 1,
):
    owned = suite_for_token(request, suite, Scope.WRITE)
    body = raw_body(request, accepts=_is_xml, expected="application/xml or text/xml")
    try:
        body = inflated(body, request.headers.get("Content-Encoding", ""),
                        settings.UPLOAD_MAX_BYTES)
        outcome = junit_ingest(
            suite=owned, body=body, actor=request.auth.label, now=timezone.now(),
            credential=credential_of(request.auth), signed=signed_of(request.auth),
            # An attempt not given is not stated: a signed run attempt then takes its place.
            query={"commit": commit, "branch": branch, "job": job,
                   "attempt": attempt if "attempt" in request.GET else None},
        )
    except JUnitInvalid as exc:
        raise ApiError(STATUS.get(exc.code, 422), exc.code, exc.message,
                       [problem.as_dict() for problem in exc.problems]) from None
    return Status(200 if outcome.duplicate else 201, junit_answer(outcome))
