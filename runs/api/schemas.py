"""The upload and trends bodies, as the OpenAPI document describes them.

The request models document the wire formats of SPEC 3.1 and 3.2; the board's own
validation (``runs.validation``) is what enforces them.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Literal

from ninja import Schema
from pydantic import ConfigDict, Field

from flakeboard import rules

NodeId = Annotated[str, Field(min_length=1, max_length=rules.NODEID_MAX_LENGTH)]
Meta = Annotated[str | None, Field(max_length=rules.META_MAX_LENGTH)]
Evidence = Annotated[str | None, Field(max_length=rules.EVIDENCE_MAX_LENGTH)]
Seed = Annotated[int | None, Field(ge=rules.SEED_MIN, le=rules.SEED_MAX)]
StatedTier = Annotated[
    Literal[0, 1, 2] | None,
    Field(description="A stated 0 or 1 sticks to the node; a stated 2 never loosens it."),
]


# --- requests ------------------------------------------------------------------------


class MeasurementIn(Schema):
    """One row of flake-report.json, as the budget script writes it."""

    nodeid: NodeId
    n: int = Field(ge=1, le=rules.COUNT_MAX)
    fails: int = Field(ge=0, le=rules.COUNT_MAX, description="At most n.")
    upper95: float | None = Field(
        None, ge=0, le=1,
        description="The script's bound: kept, flagged when it differs from the server's.",
    )
    seed_base: Seed = None
    tier: StatedTier = None


class ReportEnvelope(Schema):
    measurements: list[MeasurementIn]
    commit: Meta = None
    branch: Meta = None
    evidence: Evidence = None
    selected_total: int | None = Field(
        None, ge=1, le=rules.COUNT_MAX,
        description="The size of the selected test set, for the quarantined share.",
    )


class SignalRecordIn(Schema):
    """One node's typed gate signals for a candidate patch."""

    node: NodeId
    property_check: rules.PropertyCheck
    fixture_lock: rules.FixtureLock
    flake_status: rules.FlakeStatus
    fixture_manifest: Meta = None
    seed: Seed = None
    freeze_expires: date | datetime | None = None
    tier: StatedTier = None


class SignalsEnvelope(Schema):
    records: list[SignalRecordIn]
    patch: Meta = None
    commit: Meta = None
    evidence: Evidence = None


ReportUpload = list[MeasurementIn] | ReportEnvelope
SignalsUpload = list[SignalRecordIn] | SignalsEnvelope


# --- answers -------------------------------------------------------------------------


class ShareOut(Schema):
    quarantined: int = Field(description="Open, unexpired, non-violating entries.")
    test_set_size: int
    size_source: rules.SizeSource | None = Field(
        description="selected_total (stated by the report) or known_nodes (the board's)."
    )
    share: float
    cap: float
    over_cap: bool


class PolicyOut(Schema):
    max_upper_rate: float
    min_runs: int
    max_quarantined_share: float
    max_quarantine_days: int


class JudgedAgainstOut(Schema):
    ledger_revision: int | None = Field(
        description="The served ledger's revision (its ETag) the answer was judged against."
    )
    policy: PolicyOut | None = Field(description="The suite's policy at upload.")
    policy_hash: str | None = Field(description="A fingerprint of the policy's numbers.")


class FixturePinOut(Schema):
    manifest: str
    seed: int | None


class GateCounts(Schema):
    measurements: int
    fail: int
    warn: int
    ok: int


class EntryRef(Schema):
    id: int
    owner: str
    expires: date
    state: rules.EntryState | None = Field(description="The entry's state at upload.")


class MeasurementOut(Schema):
    nodeid: str
    status: rules.GateStatus
    reason: rules.Reason
    n: int
    fails: int
    upper95: float = Field(description="The server's Wilson upper bound.")
    reported_upper95: float | None
    flags: list[rules.Flag]
    entry: EntryRef | None = Field(description="The ledger entry the gate used, if any.")


class ReportAnswer(Schema):
    id: int | None = Field(description="null in a dry run.")
    url: str | None = Field(description="The report on the board; null in a dry run.")
    duplicate: bool = Field(description="The same body was uploaded before: its result.")
    dry_run: bool
    status: rules.GateStatus
    reason: rules.Reason
    exit_code: Literal[0, 1]
    judged_against: JudgedAgainstOut
    share: ShareOut
    counts: GateCounts
    measurements: list[MeasurementOut]


class RecordOut(Schema):
    node: str
    verdict: rules.Verdict
    reason: rules.Reason
    flags: list[rules.Flag]
    fixture_lock: rules.FixtureLock = Field(description="The effective fixture lock.")
    flake_status: rules.FlakeStatus = Field(description="The effective flake status.")
    entry: EntryRef | None = Field(description="The node's open ledger entry at upload.")


class BatchAnswer(Schema):
    id: int | None = Field(description="null in a dry run.")
    url: str | None = Field(description="The batch on the board; null in a dry run.")
    duplicate: bool
    dry_run: bool
    verdict: rules.Verdict
    reason: rules.Reason
    exit_code: Literal[0, 1, 2] = Field(description="accept 0, reject 1, hold 2.")
    judged_against: JudgedAgainstOut
    fixture_pin: FixturePinOut | None = Field(description="The suite's pin at upload.")
    reason_counts: dict[rules.Reason, int]
    records: list[RecordOut]


class TrendsOut(Schema):
    model_config = ConfigDict(populate_by_name=True)

    suite: str
    start: date = Field(alias="from")
    end: date = Field(alias="to")
    bucket: Literal["day", "week"]
    source: Literal["verdicts", "reports"]
    buckets: list[date] = Field(description="The first day of each bucket (weeks: Monday).")
    series: dict[rules.Reason, list[int]] = Field(
        description="Per reason code, its count in each bucket; codes never seen are left out."
    )
    totals: dict[rules.Reason, int]
