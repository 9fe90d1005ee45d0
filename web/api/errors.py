"""Every API error has one JSON shape: ``{"error": code, "message": text, "details": [...]}``.

A detail names the offending row (its index in the uploaded list) and field, each null when
there is none, so CI can print exactly what to fix. A query parameter refused is 422
``invalid_request`` on every endpoint, its detail naming the parameter as the field; what an
upload holds refused is 422 ``validation_failed`` (docs/api.md).
"""

from __future__ import annotations

import logging

from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI, Schema
from ninja.errors import AuthenticationError, HttpError, ValidationError
from pydantic import Field

logger = logging.getLogger(__name__)


class ErrorDetail(Schema):
    row: int | None = Field(description="The offending row's index in the uploaded list; "
                                        "null outside the rows (a query parameter).")
    field: str | None = Field(description="The offending field or query parameter.")
    code: str
    message: str


class ErrorOut(Schema):
    error: str
    message: str
    details: list[ErrorDetail] = []


# What an endpoint that reads a JSON body answers besides its own answers: not JSON (400), no
# token or not the suite's (401, 403), too large or too many rows (413), not declared JSON
# (415), not a valid body (422).
BODY_ERRORS = dict.fromkeys((400, 401, 403, 413, 415, 422), ErrorOut)


class ApiError(Exception):
    """An answer other than success, raised anywhere below a view."""

    def __init__(self, status: int, code: str, message: str, details=(), headers=None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = list(details)
        self.headers = headers or {}


def refused(exc) -> ApiError:
    """An upload refused whole (``ledger.refusals.UploadInvalid``): not JSON is 400; more rows
    than an upload may hold is 413; JSON that is not a valid upload is 422. Nothing was
    stored."""
    status = {"invalid_json": 400, "too_many_records": 413}.get(exc.code, 422)
    return ApiError(status, exc.code, exc.message, [p.as_dict() for p in exc.problems])


def error_response(
    api: NinjaAPI, request: HttpRequest, status: int, code: str, message: str, details=()
) -> HttpResponse:
    body = {"error": code, "message": message, "details": [_detail(d) for d in details]}
    return api.create_response(request, body, status=status)


def _detail(detail: dict) -> dict:
    """A detail with every key the shape promises: a row or field it does not name is null."""
    return {"row": detail.get("row"), "field": detail.get("field"), "code": detail["code"],
            "message": detail["message"]}


def _param_details(errors: list[dict]) -> list[dict]:
    """ninja's parameter errors as details: the last part of the location is the field."""
    details = []
    for error in errors:
        location = [str(part) for part in error.get("loc", ())]
        field = location[-1] if len(location) > 1 else None
        details.append(
            {"row": None, "field": field, "code": error.get("type", "invalid"),
             "message": error.get("msg", "is not valid")}
        )
    return details


def install_error_handlers(api: NinjaAPI) -> None:
    """Replace ninja's default error bodies with the one shape above."""

    @api.exception_handler(ApiError)
    def api_error(request, exc: ApiError):
        response = error_response(api, request, exc.status, exc.code, exc.message, exc.details)
        for name, value in exc.headers.items():
            response[name] = value
        return response

    @api.exception_handler(AuthenticationError)
    def unauthorized(request, exc):
        if request.headers.get("Authorization"):
            code, message = "invalid_token", (
                "The token is not valid: it is malformed, unknown or revoked."
            )
            challenge = 'Bearer realm="flakeboard", error="invalid_token"'
        else:
            code, message = "unauthorized", (
                "An API token is required: send the header Authorization: Bearer <token>."
            )
            challenge = 'Bearer realm="flakeboard"'
        response = error_response(api, request, 401, code, message)
        response["WWW-Authenticate"] = challenge
        return response

    @api.exception_handler(ValidationError)
    def invalid_parameters(request, exc: ValidationError):
        details = _param_details(exc.errors)
        first = details[0] if details else None
        message = "The request is not valid"
        if first is not None:
            message += f": {first['field'] or 'request'} {first['message'].lower()}"
        return error_response(api, request, 422, "invalid_request", message + ".", details)

    @api.exception_handler(Http404)
    def not_found(request, exc):
        return error_response(api, request, 404, "not_found", str(exc) or "Not found.")

    @api.exception_handler(HttpError)
    def http_error(request, exc: HttpError):
        return error_response(api, request, exc.status_code, "http_error", str(exc))

    @api.exception_handler(Exception)
    def server_error(request, exc):
        logger.exception("API request failed: %s %s", request.method, request.path)
        return error_response(
            api, request, 500, "server_error", "The board failed to answer; try again later."
        )
