"""The upload wire formats (SPEC 3.1 and 3.2): one set of models that validates an upload
whole, before anything is stored, and describes it in the OpenAPI document.

Their field types are the ledger's (``ledger/wire.py``), shared with the import and the
API's answers. A bare list is the envelope with its metadata taken from the query, so one
model validates both forms, the whole list in one call; each error becomes a
``{row, field, code, message}`` detail, at most MAX_ERRORS of them.
"""

from __future__ import annotations

import json
from typing import ClassVar

from pydantic import BaseModel, Field, ValidationError, model_validator
from pydantic.dataclasses import dataclass

from flakeboard import rules
from ledger.wire import (
    Code,
    FailCount,
    Meta,
    MomentDate,
    NodeId,
    OptionalEvidence,
    OptionalMeta,
    RunCount,
    Seed,
    StatedTier,
    Upper95,
    WireProblem,
    kind_of,
    problems,
    refuse_repeats,
)

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


# --- rows ----------------------------------------------------------------------------------
# Rows are frozen dataclasses, not models: a 100k-row upload makes 100k of them, and a
# dataclass is made in half the time. A signal record is the rules' own SignalRecord.


@dataclass(frozen=True)
class MeasurementIn:
    """One row of flake-report.json, as the budget script writes it (the client's measure
    command may add a classification)."""

    nodeid: NodeId
    n: RunCount
    fails: FailCount
    upper95: Upper95 | None = Field(
        None, description="The script's bound: kept, flagged when it differs from the server's."
    )
    seed_base: Seed | None = None
    tier: StatedTier | None = None
    classification: rules.Classification | None = Field(
        None, description="Optional: what the client's measure command found the test to be."
    )


@dataclass(frozen=True)
class SignalRecordIn(rules.SignalRecord):
    """One node's typed gate signals for a candidate patch."""

    node: NodeId
    property_check: rules.PropertyCheck
    fixture_lock: rules.FixtureLock
    flake_status: rules.FlakeStatus
    fixture_manifest: Meta | None = None
    seed: Seed | None = None
    freeze_expires: MomentDate | None = None
    tier: StatedTier | None = None


# --- envelopes -----------------------------------------------------------------------------


class _Envelope(BaseModel):
    """An upload's metadata, then its rows (``ROWS``), each naming its node (``NODE``)
    at most once."""

    ROWS: ClassVar[str]
    NODE: ClassVar[str]

    commit: OptionalMeta = ""
    evidence: OptionalEvidence = Field("", description="A CI run reference or an http(s) URL.")

    @model_validator(mode="after")
    def _each_node_once(self):
        refuse_repeats(getattr(self, self.ROWS), self.ROWS, self.NODE)
        return self


class ReportEnvelope(_Envelope):
    ROWS, NODE = "measurements", "nodeid"

    branch: OptionalMeta = ""
    selected_total: RunCount | None = Field(
        None, description="The size of the selected test set, for the quarantined share."
    )
    measurements: list[MeasurementIn]


class SignalsEnvelope(_Envelope):
    ROWS, NODE = "records", "node"

    patch: OptionalMeta = ""
    deselected_frozen: list[NodeId] = Field(
        default_factory=list,
        description="The frozen nodes the client's gate left out of the run and the batch "
                    "(--deselect-frozen): stored and shown, so that the choice is visible.",
    )
    records: list[SignalRecordIn]


# What the OpenAPI document shows: the bare list, or the envelope.
ReportUpload = list[MeasurementIn] | ReportEnvelope
SignalsUpload = list[SignalRecordIn] | SignalsEnvelope


def _parse[E: _Envelope](envelope: type[E], body: bytes, query: dict,
                         max_records: int | None) -> E:
    data = load_json(body)
    if isinstance(data, list):
        data = {**query, envelope.ROWS: data}
    elif isinstance(data, dict):
        data = {**query, **data}
    else:
        raise UploadInvalid("validation_failed", [WireProblem(
            Code.INVALID_SHAPE,
            f"the body must be a list or an object with {envelope.ROWS!r} (got {kind_of(data)})",
        )])
    rows = data.get(envelope.ROWS)
    if max_records is not None and isinstance(rows, list) and len(rows) > max_records:
        # Refused before the rows are validated: the bytes alone do not bound the work.
        raise UploadInvalid(Code.TOO_MANY_RECORDS.value, [WireProblem(
            Code.TOO_MANY_RECORDS,
            f"the upload holds {len(rows):,} {envelope.ROWS}, over the limit of "
            f"{max_records:,} per upload (UPLOAD_MAX_RECORDS; the body is also limited "
            f"in bytes, by UPLOAD_MAX_BYTES)",
            field=envelope.ROWS,
        )])
    try:
        return envelope.model_validate(data)
    except ValidationError as exc:
        raise UploadInvalid(
            "validation_failed", problems(exc, rows=envelope.ROWS, limit=MAX_ERRORS),
            exc.error_count(),
        ) from None


def parse_report(body: bytes, query: dict, max_records: int | None = None) -> ReportEnvelope:
    """A flake report, whole; a bare list takes commit, branch and evidence from ``query``."""
    return _parse(ReportEnvelope, body, query, max_records)


def parse_signals(body: bytes, query: dict, max_records: int | None = None) -> SignalsEnvelope:
    """Signal records, whole; a bare list takes patch, commit and evidence from ``query``."""
    return _parse(SignalsEnvelope, body, query, max_records)
