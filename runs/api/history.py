"""Reading back what CI uploaded: the suite's reports and verdict batches, newest first, a
page at a time, and each one's answer, exactly as its upload answered it.

The GET of an upload answers its stored result: ``duplicate`` true and ``repeats_attempt``
its attempt, since the upload is stored and this is its stored result. Uploading its body
again answers the gate as it stands now (``runs.ingest``): the same, byte for byte, until
a later attempt or a change of the ledger judges it otherwise.
"""

from __future__ import annotations

from typing import Annotated

from django.urls import reverse
from ninja import Query

from flakeboard import rules
from ledger.api.auth import Scope, suite_for_token
from web.api.errors import ApiError, ErrorOut
from web.api.paging import PER_PAGE, PageNumber, PerPage, paged

from ..models import Report, VerdictBatch
from ..outcomes import stored_outcome
from ..results import batch_answer, gate_counts, report_answer
from .schemas import BatchAnswer, BatchPage, ReportAnswer, ReportPage

# The uploads' own router: a path is answered by the router that first declares it (another
# router's GET of it would be a 405).
from .uploads import answered, on_the_board, router

READ_ERRORS = {401: ErrorOut, 403: ErrorOut, 422: ErrorOut}
ONE_ERRORS = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut}
READ = "Needs a read (or write) token of the suite."
SUMMARY_FIELDS = ("id", "created_at", "commit", "reason", "exit_code")


def _summary(request, upload, page: str, api: str) -> dict:
    slug = upload.suite.slug
    return {
        **{name: getattr(upload, name) for name in SUMMARY_FIELDS},
        "url": request.build_absolute_uri(reverse(page, args=[slug, upload.pk])),
        "api_url": request.build_absolute_uri(
            reverse(f"api:{api}", kwargs={"suite": slug, "id": upload.pk})),
    }


def _listed(request, slug: str, model, filters: dict, page: int, per_page: int, item):
    """A page of the suite's uploads of ``model``, newest first, those of each filter given."""
    suite = suite_for_token(request, slug, Scope.READ)
    # A commit is stored in its canonical form: ``ABC123`` finds the uploads of abc123.
    filters = {**filters, "commit": rules.canonical_commit(filters["commit"])}
    # No stored commit, branch or patch holds a control character (PostgreSQL could not
    # even compare a NUL): such a filter is refused, naming it.
    odd = [name for name, value in filters.items() if rules.has_control_chars(value)]
    if odd:
        raise ApiError(422, "invalid_request",
                       f"{', '.join(odd)} may not hold control characters.",
                       [{"field": name, "code": "control_characters",
                         "message": "may not hold control characters"} for name in odd])
    found = model.objects.filter(suite=suite, **{k: v for k, v in filters.items() if v})

    def summary(upload) -> dict:
        upload.suite = suite
        return item(request, upload)

    return paged(request, found.order_by("-created_at", "-id"), page=page, per_page=per_page,
                 item=summary)


def _report_summary(request, report: Report) -> dict:
    return {**_summary(request, report, "report", "report"), "branch": report.branch,
            "status": report.status, "counts": gate_counts(report)}


def _batch_summary(request, batch: VerdictBatch) -> dict:
    return {**_summary(request, batch, "batch", "batch"), "patch": batch.patch,
            "verdict": batch.verdict, "records": batch.record_count,
            "reason_counts": batch.reason_counts}


def _stored_answer(request, slug: str, pk: int, *, model, what: str, answer_of, schema):
    """The stored answer of the suite's upload ``pk`` of ``model``, as its upload answered it;
    404 naming ``what`` when the suite has none."""
    suite = suite_for_token(request, slug, Scope.READ)
    upload = model.objects.filter(suite=suite, pk=pk).first()
    if upload is None:
        raise ApiError(404, "not_found", f"This suite has no {what} {pk}.")
    upload.suite = suite
    return answered(200, on_the_board(request, answer_of(stored_outcome(upload)), schema), schema)


def _listing_description(kind: str, other: str) -> str:
    """A list endpoint's description: a page of ``kind`` summaries, filtered by commit or
    ``other``."""
    return (f"A page of {kind} summaries, newest first, optionally only of one commit or "
            f"{other}. `next` is the following page's address (null on the last). " + READ)


def _stored_description(kind: str, later: str) -> str:
    """A stored upload's description: its answer until ``later`` (a later upload judged with
    it) or the ledger changes it."""
    return ("The stored result, as its upload answered it: `duplicate` true, `repeats_attempt` "
            f"its attempt. Uploading its body again answers the same until a later {later} or "
            f"a change of the ledger judges it otherwise. 404 for an id of no {kind} of this "
            "suite. " + READ)


@router.get(
    "/suites/{suite}/reports",
    response={200: ReportPage, **READ_ERRORS},
    summary="The suite's flake reports, newest first",
    description=_listing_description("report", "branch"),
)
def reports(
    request,
    suite: str,
    commit: Annotated[str, Query(description="Only this commit's reports.")] = "",
    branch: Annotated[str, Query(description="Only this branch's reports.")] = "",
    page: PageNumber = 1,
    per_page: PerPage = PER_PAGE,
):
    return _listed(request, suite, Report, {"commit": commit, "branch": branch}, page,
                   per_page, _report_summary)


@router.get(
    "/suites/{suite}/verdicts",
    response={200: BatchPage, **READ_ERRORS},
    summary="The suite's verdict batches, newest first",
    description=_listing_description("batch", "patch"),
)
def verdicts(
    request,
    suite: str,
    commit: Annotated[str, Query(description="Only this commit's batches.")] = "",
    patch: Annotated[str, Query(description="Only this patch's batches.")] = "",
    page: PageNumber = 1,
    per_page: PerPage = PER_PAGE,
):
    return _listed(request, suite, VerdictBatch, {"commit": commit, "patch": patch}, page,
                   per_page, _batch_summary)


@router.get(
    "/suites/{suite}/reports/{int:id}",
    response={200: ReportAnswer, **ONE_ERRORS},
    url_name="report",
    summary="One report's answer, as its upload answered it",
    description=_stored_description("report", "report at its commit"),
)
def report(request, suite: str, id: int):
    return _stored_answer(request, suite, id, model=Report, what="report",
                          answer_of=report_answer, schema=ReportAnswer)


@router.get(
    "/suites/{suite}/verdicts/{int:id}",
    response={200: BatchAnswer, **ONE_ERRORS},
    url_name="batch",
    summary="One verdict batch's answer, as its upload answered it",
    description=_stored_description("batch", "attempt at its patch and commit"),
)
def batch(request, suite: str, id: int):
    return _stored_answer(request, suite, id, model=VerdictBatch, what="batch",
                          answer_of=batch_answer, schema=BatchAnswer)
