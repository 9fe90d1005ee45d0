"""Reason-code counts per day or week, read from the per-day rollups."""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Annotated, Literal

from django.utils import timezone
from ninja import Query, Router
from pydantic import BeforeValidator

from ledger.api.auth import Scope, suite_for_token
from ledger.api.errors import ApiError, ErrorOut

from ..trends import bucket_start, reason_counts
from .schemas import TrendsOut

router = Router(tags=["trends"])

DEFAULT_DAYS = 30
MAX_BUCKETS = 1100  # three years of days, twenty of weeks


ISO_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _iso_day(value):
    """Only YYYY-MM-DD: not a timestamp, nor a datetime that happens to be midnight."""
    if isinstance(value, str) and not ISO_DAY.fullmatch(value):
        raise ValueError("must be a date written YYYY-MM-DD")
    return value


Day = Annotated[date, BeforeValidator(_iso_day)]
FROM = f"The first day, YYYY-MM-DD (default: {DEFAULT_DAYS} days before to)."
TO = "The last day, YYYY-MM-DD (default: today)."


def _range(start: date | None, end: date | None, today: date, bucket: str) -> tuple[date, date]:
    span = timedelta(days=DEFAULT_DAYS - 1)
    try:
        if end is None:
            end = today if start is None else start + span
        if start is None:
            start = end - span
        first = bucket_start(start, bucket)
    except OverflowError:
        raise ApiError(
            422, "invalid_request", "The range reaches past the ends of the calendar.",
            [{"field": "from", "code": "out_of_range", "message": "is too close to the "
              "calendar's first or last day"}],
        ) from None
    if start > end:
        raise ApiError(
            422, "invalid_request", f"from ({start}) must not be after to ({end}).",
            [{"field": "from", "code": "out_of_range", "message": "must not be after to"}],
        )
    if (end - first).days // (7 if bucket == "week" else 1) + 1 > MAX_BUCKETS:
        raise ApiError(
            422, "invalid_request",
            f"The range holds more than {MAX_BUCKETS} {bucket}s: ask for a shorter one.",
            [{"field": "from", "code": "range_too_long", "message": "is too far from to"}],
        )
    return start, end


@router.get(
    "/suites/{suite}/trends",
    response={200: TrendsOut, 401: ErrorOut, 403: ErrorOut, 422: ErrorOut},
    by_alias=True,
    summary="Reason-code counts per day or week",
    description=(
        f"Counts of each reason code over [from, to] (both included; by default the last "
        f"{DEFAULT_DAYS} days), per day or per week (weeks start on Monday), from verdict "
        f"batches or from flake reports. At most {MAX_BUCKETS} buckets. Needs a read token."
    ),
)
def trends(
    request,
    suite: str,
    start: Annotated[Day | None, Query(alias="from", description=FROM)] = None,
    end: Annotated[Day | None, Query(alias="to", description=TO)] = None,
    bucket: Literal["day", "week"] = "day",
    source: Literal["verdicts", "reports"] = "verdicts",
):
    suite = suite_for_token(request, suite, Scope.READ)
    start, end = _range(start, end, timezone.now().date(), bucket)
    counts = reason_counts(suite, start=start, end=end, bucket=bucket, source=source)
    return {
        "suite": suite.slug, "from": start, "to": end, "bucket": bucket, "source": source,
        **counts,
    }
