"""The two upload endpoints CI calls on every patch: flake reports and signal records.

Both take the body as the tools write it, evaluate it against the ledger as it is now,
store it once (the same body again answers the stored result) and answer with the
gate's exit code, also sent as the ``Flakeboard-Exit-Code`` header so a shell script can
fail on it with curl alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import orjson
from django.http import HttpResponse
from django.utils import timezone
from ninja import Query, Router

from ledger.api.auth import Scope, suite_for_token
from ledger.api.refusing import as_refusal
from ledger.trust import credential_of, signed_of
from web.api.bodies import raw_json_body
from web.api.errors import BODY_ERRORS
from web.api.openapi import json_body

from ..ingest import report_ingest, signals_ingest
from ..outcomes import IngestOutcome
from ..results import batch_answer, report_answer
from ..wire import ReportUpload, SignalsUpload
from .schemas import BatchAnswer, ReportAnswer

router = Router(tags=["uploads"])

EXIT_CODE_HEADER = "Flakeboard-Exit-Code"
ANSWER_HEADERS = {
    EXIT_CODE_HEADER: {
        "description": "The answer's exit_code, for scripts that read headers only.",
        "schema": {"type": "integer"},
    }
}
STORED_HEADERS = {
    **ANSWER_HEADERS,
    "Location": {"description": "The upload on the board.", "schema": {"type": "string"}},
}
DOCUMENTED_HEADERS = {200: {"headers": ANSWER_HEADERS}, 201: {"headers": STORED_HEADERS}}
ROWS_KEY = {ReportAnswer: "measurements", BatchAnswer: "records"}
DryRun = Annotated[bool, Query(description="Evaluate and answer, store nothing.")]
Evidence = Annotated[str, Query(description="For a bare list: a CI run reference or an "
                                            "http(s) URL.")]


def upload_body(body_type, description: str) -> dict:
    """``openapi_extra`` of an upload endpoint: its body, and the exit-code header (with the
    Location of a stored upload) on its answers."""
    return json_body(body_type, description=description, responses=DOCUMENTED_HEADERS)


def upload(
    request,
    slug: str,
    *,
    ingest: Callable[..., IngestOutcome],
    answer_of: Callable[[IngestOutcome], dict],
    schema: type[ReportAnswer | BatchAnswer],
    dry_run: bool,
    query: dict,
) -> HttpResponse:
    """Both endpoints' one frame: a write token of the suite, the body, the ingest service
    (``report_ingest`` or ``signals_ingest``, told what the token vouches for) and the
    answer made of its outcome, with the exit-code header; 201 with the Location of a
    stored upload, 200 for a dry run or a duplicate."""
    suite = suite_for_token(request, slug, Scope.WRITE)
    body = raw_json_body(request)
    with as_refusal():
        outcome = ingest(
            suite=suite, body=body, actor=request.auth.label, dry_run=dry_run, query=query,
            now=timezone.now(), credential=credential_of(request.auth),
            signed=signed_of(request.auth),
        )
    answer = on_the_board(request, answer_of(outcome), schema)
    stored = not (outcome.duplicate or outcome.dry_run)
    sent = answered(201 if stored else 200, answer, schema)
    sent[EXIT_CODE_HEADER] = str(answer["exit_code"])
    if stored:
        sent["Location"] = answer["url"]
    return sent


def on_the_board(request, answer: dict, schema: type[ReportAnswer | BatchAnswer]) -> dict:
    """The answer with its links made absolute: the upload's, a batch's patch page and
    each row's node page."""
    board = request.build_absolute_uri("/").removesuffix("/")
    for key in ("url", "patch_url"):
        if answer.get(key):
            answer[key] = board + answer[key]
    for earlier in answer.get("earlier_attempts", ()):
        earlier["url"] = board + earlier["url"]
    for row in answer[ROWS_KEY[schema]]:
        if row["url"]:
            row["url"] = board + row["url"]
    return answer


def answered(status: int, answer: dict, schema: type[ReportAnswer | BatchAnswer]) -> HttpResponse:
    """The answer as JSON. Its envelope goes through ``schema`` as the API's other answers
    do; its rows (up to UPLOAD_MAX_RECORDS plain dicts, which ``runs.ingest`` makes in the
    rows' schema, as ``tests/test_upload_answers.py`` checks) are written as they are:
    validating each through its model took a fifth of a large upload's time and most of
    its memory."""
    rows_key = ROWS_KEY[schema]
    envelope = schema.model_validate({**answer, rows_key: []}).model_dump(mode="json")
    envelope[rows_key] = answer[rows_key]
    return HttpResponse(orjson.dumps(envelope), status=status, content_type="application/json")


@router.post(
    "/suites/{suite}/reports",
    response={200: ReportAnswer, 201: ReportAnswer, **BODY_ERRORS},
    summary="Upload flake-report.json and gate it",
    description=(
        "The bare list the budget script writes (commit, branch and evidence then come "
        "from the query), or the envelope. Each measurement is gated against the ledger "
        "as it is now; the report fails on any FAIL, on no measurements (`no_evidence`) "
        "or on a quarantined share over the cap. Reports at one `commit` pool per node, "
        "each seed counted once (`pooled`): a luckier second measurement never replaces "
        "the first. 201 when stored; 200 for a dry run or a body uploaded before "
        "(`duplicate`, naming the report it repeats in `repeats_attempt`: stored once, and "
        "answered with its measurements pooled over every report at the commit now). "
        "Needs a write token."
    ),
    openapi_extra=upload_body(
        ReportUpload, "A flake report: the bare list the budget script writes, or the envelope."
    ),
)
def upload_report(
    request,
    suite: str,
    dry_run: DryRun = False,
    commit: Annotated[str, Query(description="For a bare list: the commit measured.")] = "",
    branch: Annotated[str, Query(description="For a bare list: the branch.")] = "",
    evidence: Evidence = "",
):
    return upload(
        request, suite, ingest=report_ingest, answer_of=report_answer, schema=ReportAnswer,
        dry_run=dry_run, query={"commit": commit, "branch": branch, "evidence": evidence},
    )


@router.post(
    "/suites/{suite}/verdicts",
    response={200: BatchAnswer, 201: BatchAnswer, **BODY_ERRORS},
    summary="Upload signal records and arbitrate them",
    description=(
        "A bare list of signal records (patch, commit and evidence then come from the "
        "query), or the envelope. Each record gets ACCEPT, HOLD or REJECT with one reason "
        "code; the batch's verdict is REJECT on any reject, else HOLD on any hold, else "
        "ACCEPT, and an empty batch holds (`no_evidence`). Batches at one `patch` and "
        "`commit` are attempts of one gate: attempt k judges each node over attempts 1..k "
        "(`attempts`), so a retry never turns a failure into an ACCEPT; a dry run answers "
        "as the next attempt. 201 when stored; 200 for a dry run or a body uploaded before "
        "(`duplicate`, naming the attempt it repeats in `repeats_attempt`: stored once, and "
        "answered with the verdict over every attempt at the patch and commit now). "
        "exit_code: accept 0, reject 1, hold 2. Needs a write token, or a trusted CI's "
        "OIDC token: its signed sha is then the commit, and a re-run of its job a new "
        "attempt, never a duplicate."
    ),
    openapi_extra=upload_body(SignalsUpload, "Signal records: a bare list, or the envelope."),
)
def upload_verdicts(
    request,
    suite: str,
    dry_run: DryRun = False,
    patch: Annotated[str, Query(description="For a bare list: the candidate patch.")] = "",
    commit: Annotated[str, Query(description="For a bare list: the commit.")] = "",
    evidence: Evidence = "",
):
    return upload(
        request, suite, ingest=signals_ingest, answer_of=batch_answer, schema=BatchAnswer,
        dry_run=dry_run, query={"patch": patch, "commit": commit, "evidence": evidence},
    )
