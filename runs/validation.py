"""Whole-upload validation of flake reports (SPEC 3.1) and signal records (SPEC 3.2).

Every row is checked before anything is stored. A failure names the row index and the
field, with a machine-readable code; at most MAX_ERRORS are collected.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, date, datetime

from flakeboard import rules
from ledger import messages

MAX_ERRORS = 50
# The upload error code of each node-id problem.
NODEID_CODES = {
    rules.Problem.NOT_A_STRING: "wrong_type",
    rules.Problem.NOT_UNICODE: "invalid_unicode",
}


@dataclass
class Problem:
    code: str
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


class UploadInvalid(Exception):
    """The upload is refused whole; nothing of it is stored."""

    def __init__(self, code: str, problems: list[Problem]):
        self.code = code
        self.problems = problems
        super().__init__(self.message)

    @property
    def message(self) -> str:
        first = str(self.problems[0]) if self.problems else self.code
        more = len(self.problems) - 1
        return first + (f" (and {more} more problem{'s' * (more > 1)})" if more > 0 else "")


class _Collector:
    def __init__(self):
        self.problems: list[Problem] = []

    def add(self, code, message, row=None, field=None):
        self.problems.append(Problem(code, message, row, field))
        if len(self.problems) >= MAX_ERRORS:
            raise UploadInvalid("validation_failed", self.problems)

    def raise_if_any(self):
        if self.problems:
            raise UploadInvalid("validation_failed", self.problems)


def load_json(body: bytes | str) -> object:
    """Parse JSON, keeping NaN and Infinity as floats so the row check can name them."""
    try:
        return json.loads(body, parse_constant=float)
    except (ValueError, RecursionError) as exc:
        raise UploadInvalid(
            "invalid_json", [Problem("invalid_json", f"The body is not valid JSON: {exc}")]
        ) from None


def _type_name(value) -> str:
    return {bool: "a boolean", str: "a string", list: "a list", dict: "an object"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


def _int(c, row, name, value, *, low, high, required=True):
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        shown = "missing" if value is None else _type_name(value)
        c.add("wrong_type" if value is not None else "missing_field",
              f"must be a whole number (got {shown})", row, name)
        return None
    if not low <= value <= high:
        c.add("out_of_range", f"must be between {low} and {high} (got {value})", row, name)
        return None
    return value


def _text(c, row, name, value, *, max_length, required=False):
    if value is None:
        if required:
            c.add("missing_field", "is required", row, name)
        return None
    if not isinstance(value, str):
        c.add("wrong_type", f"must be a string (got {_type_name(value)})", row, name)
        return None
    if len(value) > max_length:
        c.add("too_long", f"must be at most {max_length} characters long", row, name)
        return None
    if rules.has_control_chars(value):
        c.add("control_characters", messages.phrase(rules.Problem.CONTROL_CHARS, 0), row, name)
        return None
    if not rules.is_unicode(value):
        c.add("invalid_unicode", messages.phrase(rules.Problem.NOT_UNICODE, 0), row, name)
        return None
    return value


def _nodeid(c, row, name, value, seen: set):
    if value is None:
        c.add("missing_field", "is required", row, name)
        return None
    if (problem := rules.nodeid_problem(value)) is not None:
        c.add(NODEID_CODES.get(problem, "invalid_nodeid"),
              messages.phrase(problem, rules.NODEID_MAX_LENGTH), row, name)
        return None
    if value in seen:
        c.add("duplicate_node", f"{value!r} appears twice in one upload", row, name)
        return None
    seen.add(value)
    return value


def _tier(c, row, value):
    if value is None:
        return None
    if isinstance(value, bool) or value not in rules.Tier.ALL:
        c.add("invalid_value", f"must be 0, 1 or 2 (got {value!r})", row, "tier")
        return None
    return value


def _rows(c, body, key: str) -> tuple[list, dict]:
    """The row list and the envelope (empty for a bare list)."""
    if isinstance(body, list):
        return body, {}
    if isinstance(body, dict):
        rows = body.get(key)
        if not isinstance(rows, list):
            c.add("invalid_shape", f"an envelope needs {key!r}: a list", None, key)
            c.raise_if_any()
        return rows, body
    c.add("invalid_shape", f"the body must be a list or an object with {key!r} (got "
          f"{_type_name(body)})")
    c.raise_if_any()
    return [], {}


def _meta(c, source: dict, names: tuple[str, ...]) -> dict:
    meta = {}
    for name in names:
        limit = rules.EVIDENCE_MAX_LENGTH if name == "evidence" else rules.META_MAX_LENGTH
        meta[name] = _text(c, None, name, source.get(name), max_length=limit) or ""
    return meta


@dataclass(frozen=True)
class MeasurementRow:
    nodeid: str
    n: int
    fails: int
    upper95: float | None
    seed_base: int | None
    tier: int | None


@dataclass
class ParsedReport:
    rows: list[MeasurementRow]
    commit: str = ""
    branch: str = ""
    evidence: str = ""
    selected_total: int | None = None


def parse_report(body: object, query: dict | None = None) -> ParsedReport:
    c = _Collector()
    rows, envelope = _rows(c, body, "measurements")
    meta = _meta(c, {**(query or {}), **envelope}, ("commit", "branch", "evidence"))
    selected_total = _int(
        c, None, "selected_total", envelope.get("selected_total"),
        low=1, high=rules.COUNT_MAX, required=False,
    )
    parsed, seen = [], set()
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            c.add("wrong_type", f"each measurement must be an object (got {_type_name(row)})", i)
            continue
        nodeid = _nodeid(c, i, "nodeid", row.get("nodeid"), seen)
        n = _int(c, i, "n", row.get("n"), low=1, high=rules.COUNT_MAX)
        fails = _int(c, i, "fails", row.get("fails"), low=0, high=rules.COUNT_MAX)
        if n is not None and fails is not None and fails > n:
            c.add("out_of_range", f"fails ({fails}) must not exceed n ({n})", i, "fails")
        reported = row.get("upper95")
        if reported is not None:
            if isinstance(reported, bool) or not isinstance(reported, int | float):
                c.add("wrong_type", f"must be a number (got {_type_name(reported)})", i, "upper95")
                reported = None
            elif not math.isfinite(reported):
                c.add("not_finite", f"must be a finite number (got {reported})", i, "upper95")
                reported = None
            elif not 0 <= reported <= 1:
                c.add("out_of_range", f"must be between 0 and 1 (got {reported})", i, "upper95")
                reported = None
        seed_base = _int(c, i, "seed_base", row.get("seed_base"), low=rules.SEED_MIN,
                         high=rules.SEED_MAX, required=False)
        tier = _tier(c, i, row.get("tier"))
        if not c.problems:
            parsed.append(MeasurementRow(
                nodeid, n, fails, None if reported is None else float(reported), seed_base, tier
            ))
    c.raise_if_any()
    return ParsedReport(parsed, selected_total=selected_total, **meta)


@dataclass
class ParsedBatch:
    records: list[rules.SignalRecord]
    patch: str = ""
    commit: str = ""
    evidence: str = ""


def _choice(c, row, name, value, enum):
    if value is None:
        c.add("missing_field", "is required", row, name)
        return None
    try:
        return enum(value)
    except ValueError:
        allowed = ", ".join(m.value for m in enum)
        c.add("invalid_value", f"must be one of {allowed} (got {value!r})", row, name)
        return None


def _freeze_date(c, row, value) -> date | None:
    if value is None:
        return None
    if isinstance(value, str) and len(value) <= 40:
        try:
            if len(value) == 10:
                return date.fromisoformat(value)
            moment = datetime.fromisoformat(value)
            if moment.tzinfo is not None:
                moment = moment.astimezone(UTC)
            return moment.date()
        except (ValueError, OverflowError):  # an offset can push year 1 or 9999 out of range
            pass
    c.add("invalid_date", f"must be an ISO date or datetime (got {value!r})", row,
          "freeze_expires")
    return None


def parse_signals(body: object, query: dict | None = None) -> ParsedBatch:
    c = _Collector()
    rows, envelope = _rows(c, body, "records")
    meta = _meta(c, {**(query or {}), **envelope}, ("patch", "commit", "evidence"))
    records, seen = [], set()
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            c.add("wrong_type", f"each record must be an object (got {_type_name(row)})", i)
            continue
        node = _nodeid(c, i, "node", row.get("node"), seen)
        prop = _choice(c, i, "property_check", row.get("property_check"), rules.PropertyCheck)
        lock = _choice(c, i, "fixture_lock", row.get("fixture_lock"), rules.FixtureLock)
        status = _choice(c, i, "flake_status", row.get("flake_status"), rules.FlakeStatus)
        manifest = _text(c, i, "fixture_manifest", row.get("fixture_manifest"),
                         max_length=rules.META_MAX_LENGTH)
        seed = _int(c, i, "seed", row.get("seed"), low=rules.SEED_MIN, high=rules.SEED_MAX,
                    required=False)
        freeze = _freeze_date(c, i, row.get("freeze_expires"))
        tier = _tier(c, i, row.get("tier"))
        if not c.problems:
            records.append(rules.SignalRecord(node, prop, lock, status, manifest, seed, freeze,
                                              tier))
    c.raise_if_any()
    return ParsedBatch(records, **meta)
