"""A refused value as every input path says it: the board's error codes (``Code``), a
pydantic error raised with one (``refusal``), and a ValidationError turned into the
``{row, field, code, message}`` details that the API answers and the import prints
(``problems``, ``WireProblem``), or a whole upload refused (``UploadInvalid``).
The field types that raise them are ``ledger.wire``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from operator import attrgetter

from pydantic import (
    ValidationError,
)
from pydantic_core import PydanticCustomError

from flakeboard import rules


class Code(StrEnum):
    """Why a value is refused: the ``code`` of an error detail, a closed vocabulary."""

    INVALID_JSON = "invalid_json"  # the body is not JSON at all
    INVALID_SHAPE = "invalid_shape"  # neither a list nor an envelope of one
    MISSING_FIELD = "missing_field"
    WRONG_TYPE = "wrong_type"
    OUT_OF_RANGE = "out_of_range"
    NOT_FINITE = "not_finite"
    TOO_LONG = "too_long"
    CONTROL_CHARACTERS = "control_characters"
    INVALID_UNICODE = "invalid_unicode"
    INVALID_NODEID = "invalid_nodeid"
    INVALID_VALUE = "invalid_value"
    INVALID_DATE = "invalid_date"
    DUPLICATE_NODE = "duplicate_node"
    TOO_MANY_RECORDS = "too_many_records"  # more rows than one upload may hold


# The board's code for each pydantic error type: the checks below raise the board's codes
# themselves, and the strict types raise these.
CODES = {
    **{code.value: code for code in Code},
    "missing": Code.MISSING_FIELD,
    "int_type": Code.WRONG_TYPE,
    "float_type": Code.WRONG_TYPE,
    "string_type": Code.WRONG_TYPE,
    "list_type": Code.WRONG_TYPE,
    "dict_type": Code.WRONG_TYPE,
    "model_type": Code.WRONG_TYPE,
    "dataclass_type": Code.WRONG_TYPE,
    "bool_type": Code.WRONG_TYPE,
    "greater_than_equal": Code.OUT_OF_RANGE,
    "less_than_equal": Code.OUT_OF_RANGE,
    "finite_number": Code.NOT_FINITE,
    "enum": Code.INVALID_VALUE,
    "literal_error": Code.INVALID_VALUE,
    "extra_forbidden": Code.INVALID_VALUE,
    "unexpected_keyword_argument": Code.INVALID_VALUE,
}
_EXPECTED = {
    "int_type": "a whole number",
    "float_type": "a number",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "dataclass_type": "an object",
    "bool_type": "true or false",
}
# The code of each text problem; a node id's own problems are invalid_nodeid.
TEXT_CODES = {
    rules.Problem.NOT_A_STRING: Code.WRONG_TYPE,
    rules.Problem.TOO_LONG: Code.TOO_LONG,
    rules.Problem.CONTROL_CHARS: Code.CONTROL_CHARACTERS,
    rules.Problem.NOT_UNICODE: Code.INVALID_UNICODE,
}
NODEID_CODES = {
    rules.Problem.NOT_A_STRING: Code.WRONG_TYPE,
    rules.Problem.NOT_UNICODE: Code.INVALID_UNICODE,
}


def refusal(code: Code, message: str) -> PydanticCustomError:
    """A value refused with the board's ``code``; ``message`` says why, after the field."""
    return PydanticCustomError(code, message)


def kind_of(value: object) -> str:
    """What a JSON value is, for a message: "a boolean", "the number 2.5", "null"."""
    if value is None:
        return "null"
    if isinstance(value, bool):  # before int: a JSON true is not a number
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {shown(value)}"
    return {str: "a string", list: "a list"}.get(type(value), "an object")


def shown(value: object, limit: int = 60) -> str:
    """A value as a message quotes it: as JSON writes null and booleans, cut if long."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class WireProblem:
    """One refused value: its code, why, and where (a row index and a field, or None)."""

    code: Code | str
    message: str
    row: int | None = None
    field: str | None = None

    def as_dict(self) -> dict:
        return {"row": self.row, "field": self.field, "code": self.code, "message": self.message}

    def __str__(self) -> str:
        where = []
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.field is not None:
            where.append(f"field {self.field!r}")
        return (", ".join(where) + ": " if where else "") + self.message


MAX_ERRORS = 50


class UploadInvalid(Exception):
    """The upload is refused whole; nothing of it is stored."""

    def __init__(self, code: str, found: list[WireProblem], total: int | None = None):
        self.code = code
        self.problems = found[:MAX_ERRORS]
        self.total = len(found) if total is None else total  # all, not only those listed
        super().__init__(self.message)

    @property
    def message(self) -> str:
        first = str(self.problems[0]) if self.problems else self.code
        more = self.total - 1
        return first + (f" (and {more} more problem{'s' * (more > 1)})" if more > 0 else "")


def load_json(body: bytes | str) -> object:
    """Parse JSON, keeping NaN and Infinity as floats so the row check can name them."""
    try:
        return json.loads(body, parse_constant=float)
    except (ValueError, RecursionError) as exc:
        raise UploadInvalid(
            "invalid_json", [WireProblem(Code.INVALID_JSON, f"The body is not valid JSON: {exc}")]
        ) from None


def refuse_too_many(rows: list, name: str, max_records: int, field: str | None = None) -> None:
    """More rows than one upload may hold: refused before the rows are validated, since
    the bytes alone do not bound the work."""
    if len(rows) > max_records:
        raise UploadInvalid(Code.TOO_MANY_RECORDS.value, [WireProblem(
            Code.TOO_MANY_RECORDS,
            f"the upload holds {len(rows):,} {name}, over the limit of "
            f"{max_records:,} per upload (UPLOAD_MAX_RECORDS; the body is also limited "
            f"in bytes, by UPLOAD_MAX_BYTES)",
            field=field,
        )])


def load_list(body: bytes | str, name: str, max_records: int) -> list:
    """A body that must be a JSON list of ``name`` (node ids, paths), refused whole when it
    is not one or holds more than ``max_records``; its items are checked by the caller."""
    data = load_json(body)
    if not isinstance(data, list):
        raise UploadInvalid("validation_failed", [WireProblem(
            Code.INVALID_SHAPE, f"the body must be a list of {name} (got {kind_of(data)})")])
    refuse_too_many(data, name, max_records)
    return data


def _sentence(error: dict) -> str:
    kind, got, ctx = error["type"], error.get("input"), error.get("ctx") or {}
    if kind == "missing":
        return "is required"
    if kind in ("extra_forbidden", "unexpected_keyword_argument"):
        return "is not a field here (a closed vocabulary)"
    if kind in _EXPECTED:
        return f"must be {_EXPECTED[kind]} (got {kind_of(got)})"
    if kind == "greater_than_equal":
        return f"must be at least {ctx['ge']} (got {shown(got)})"
    if kind == "less_than_equal":
        return f"must be at most {ctx['le']} (got {shown(got)})"
    if kind == "finite_number":
        return f"must be a finite number (got {got})"
    if kind in ("enum", "literal_error"):
        return f"must be {ctx['expected']} (got {shown(got)})"
    return error["msg"]  # the board's own refusals are sentences already


def problems(
    error: ValidationError, *, rows: str | None = None, limit: int | None = None
) -> list[WireProblem]:
    """The first ``limit`` errors as {row, field, code, message}. A location starting
    with an index is a row of a bare list, one starting with ``rows`` a row of an
    envelope's list; any other names a field of the whole (the row is None)."""
    found = []
    for detail in error.errors(include_url=False)[:limit]:
        where = list(detail["loc"])
        if rows is not None and where == [rows]:
            found.append(WireProblem(
                Code.INVALID_SHAPE, f"an envelope needs {rows!r}: a list", None, rows
            ))
            continue
        if rows is not None and where[:1] == [rows]:
            where.pop(0)
        row = where.pop(0) if where and isinstance(where[0], int) else None
        code = CODES.get(detail["type"], detail["type"])
        sentence = _sentence(detail)
        # A field inside a field's object (a row's experiments) is named before its problem.
        inner = [str(part) for part in where[1:]]
        if any(not part.isdigit() for part in inner):
            sentence = f"{'.'.join(inner)} {sentence}"
        found.append(WireProblem(code, sentence, row, str(where[0]) if where else None))
    return found


def refuse_repeats(rows: list, rows_key: str, field: str) -> None:
    """A node named twice in one list: every repeat is refused, where it stands."""
    if len(set(map(attrgetter(field), rows))) == len(rows):
        return
    seen: set[str] = set()
    repeats = []
    for index, row in enumerate(rows):
        value = getattr(row, field)
        if value in seen:
            repeats.append({
                "type": refusal(
                    Code.DUPLICATE_NODE, f"{shown(value)} appears twice in one upload"
                ),
                "loc": (rows_key, index, field),
                "input": value,
            })
        seen.add(value)
    raise ValidationError.from_exception_data("upload", repeats)
