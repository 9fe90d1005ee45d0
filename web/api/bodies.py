"""An upload's raw body, as every upload endpoint reads it: refused with 413 when it is
over ``UPLOAD_MAX_BYTES`` (before it is read, when its declared length says so), and with
415 when it is not declared as a type the endpoint takes.

Uploads are read as raw bytes: their digest makes them idempotent, and each endpoint's
own parser names the row and field of each problem.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import RequestDataTooBig

from .errors import ApiError


def too_large(limit: int) -> ApiError:
    return ApiError(413, "too_large", f"The body is over the upload limit of {limit} bytes.")


def raw_body(request, *, accepts: Callable[[str], bool], expected: str) -> bytes:
    """The body's bytes; 413 when over the limit, 415 unless ``accepts`` its content type
    (``expected`` names the types taken, for the message)."""
    limit = settings.UPLOAD_MAX_BYTES
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        raise too_large(limit)
    content_type = request.content_type or ""
    if not accepts(content_type):
        raise ApiError(
            415, "unsupported_media_type",
            f"The body must be sent as Content-Type: {expected} "
            f"(got {content_type or 'none'}).",
        )
    try:
        body = request.body
    except RequestDataTooBig:
        raise too_large(limit) from None
    if len(body) > limit:
        raise too_large(limit)
    return body


def is_json(content_type: str) -> bool:
    return content_type == "application/json" or content_type.endswith("+json")


def raw_json_body(request) -> bytes:
    """The raw JSON body, refused when too large (413) or not declared JSON (415)."""
    return raw_body(request, accepts=is_json, expected="application/json")
