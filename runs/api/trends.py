"""Reason-code counts per day or week, read from the per-day rollups, and for verdict
batches the retries at one commit."""

from __future__ import annotations

from typing import Annotated, Literal

from django.utils import timezone
from ninja import Query, Router
from pydantic import WithJsonSchema

from flakeboard.rules.trends_range import (
    DEFAULT_RANGE_DAYS,
    EARLIEST_DAY,
    MAX_RANGE_DAYS,
    RENAMED_PARAMETERS,
    RangeError,
    day_range,
)
from ledger.api.auth import Scope, suite_for_token
from web.api.errors import ApiError, ErrorOut

from ..trend_counts import birth_counts, reason_counts, retry_counts
from .schemas import TrendsOut

router = Router(tags=["trends"])

# Taken as text and read by day_range, the one judge of a range for the page and the API;
# the document still calls them dates.
Day = Annotated[str, WithJsonSchema({"type": "string", "format": "date"})]
FROM = (
    f"The first day, YYYY-MM-DD, {EARLIEST_DAY} at the earliest "
    f"(default: {DEFAULT_RANGE_DAYS - 1} days before to)."
)
TO = (
    "The last day, YYYY-MM-DD (default: today). Today in UTC at the latest: the day after, "
    "already today east of UTC, is taken as today (the answer's `to` says so); a later day "
    "is refused."
)


def _refuse_renamed(query) -> None:
    """start and end are the trends page's old names for from and to: refused here rather
    than ignored, which would answer the default range as if it were the one asked for."""
    sent = [name for name in RENAMED_PARAMETERS if name in query]
    if sent:
        raise ApiError(
            422, "invalid_request",
            "Send the range as from and to: " + ", ".join(
                f"{name} is not a parameter, use {RENAMED_PARAMETERS[name]}" for name in sent
            ) + ".",
            [{"field": name, "code": "renamed",
              "message": f"is not a parameter: use {RENAMED_PARAMETERS[name]}"}
             for name in sent],
        )


@router.get(
    "/suites/{suite}/trends",
    response={200: TrendsOut, 401: ErrorOut, 403: ErrorOut, 422: ErrorOut},
    by_alias=True,
    summary="Reason-code counts per day or week",
    description=(
        f"Counts of each reason code over [from, to] (both included; by default the last "
        f"{DEFAULT_RANGE_DAYS} days), per day or per week (weeks start on Monday), from "
        f"verdict batches or from flake reports. For verdict batches, `retries` adds per "
        f"bucket the attempts made after a REJECT at the same patch and commit and the "
        f"nodes that flipped between attempts (SPEC 2.4a). The range ends today (in UTC) at "
        f"the latest: a `to` of the day after is answered up to today, a later one is "
        f"refused. It starts on {EARLIEST_DAY} at the earliest and spans at most "
        f"{MAX_RANGE_DAYS} days. Needs a read token."
    ),
)
def trends(
    request,
    suite: str,
    first: Annotated[Day | None, Query(alias="from", description=FROM)] = None,
    last: Annotated[Day | None, Query(alias="to", description=TO)] = None,
    bucket: Literal["day", "week"] = "day",
    source: Literal["verdicts", "reports"] = "verdicts",
):
    suite = suite_for_token(request, suite, Scope.READ)
    _refuse_renamed(request.GET)
    found = day_range(first, last, today=timezone.now().date())
    if isinstance(found, RangeError):
        raise ApiError(422, "invalid_request", found.message, [
            {"field": found.parameter, "code": found.problem.value, "message": found.message},
        ])
    counts = reason_counts(suite, start=found.start, end=found.end, bucket=bucket, source=source)
    retries = births = None
    if source == "verdicts":
        retries = retry_counts(suite, start=found.start, end=found.end, bucket=bucket)
        del retries["buckets"]
    else:
        births = birth_counts(suite, start=found.start, end=found.end, bucket=bucket)
        del births["buckets"]
    return {
        "suite": suite.slug, "from": found.start, "to": found.end, "bucket": bucket,
        "source": source, **counts, "retries": retries, "births": births,
    }
