"""The answers of the upload and trends endpoints, as the OpenAPI document describes them.

The request bodies are the wire models of ``runs/wire.py``, which also validate them. An
answer is made by ``runs/results.py`` as a plain dict; these models describe exactly its
keys (an extra one is refused, not silently dropped) with the wire's field types.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Literal

from ninja import Schema
from pydantic import ConfigDict, Field

from flakeboard import rules
from ledger.wire import FailCount, FixturePinOut, IsoDate, NodeId, PolicyOut, RunCount, Upper95
from web.api.paging import PagedOut
from web.api.schemas import Answer

# A row's ``url``, which ``runs.results.link_nodes`` sets alike for both kinds of row.
NodePageUrl = Annotated[str | None, Field(
    description="The node's page on the board, for a row that fails or warns; null for a "
                "passing one."
)]


class ShareOut(Answer):
    quarantined: int = Field(description="Open, unexpired, non-violating entries.")
    test_set_size: int
    size_source: rules.SizeSource | None = Field(
        description="selected_total (stated by the report) or known_nodes (the board's)."
    )
    share: float
    cap: float
    over_cap: bool


class JudgedAgainstOut(Answer):
    ledger_revision: int | None = Field(
        description="The served ledger's revision (its ETag) the answer was judged against."
    )
    policy: PolicyOut | None = Field(description="The suite's policy at upload.")
    policy_hash: str | None = Field(description="A fingerprint of the policy's numbers.")


class GateCounts(Answer):
    measurements: int
    fail: int
    warn: int
    ok: int


class EntryRef(Answer):
    id: int
    owner: str
    expires: IsoDate
    state: rules.EntryState | None = Field(description="The entry's state at upload.")
    tier: int | None = Field(
        description="For a tier violation: the node's tier now (0 or 1), which voids the "
                    "entry; null otherwise."
    )
    tier_rule: str | None = Field(
        description="For a tier violation: the glob of the tier rule that makes the node "
                    "tier 0 or 1; null when an upload stated the tier, and otherwise."
    )


class MeasurementOut(Answer):
    nodeid: NodeId
    status: rules.GateStatus
    reason: rules.Reason
    n: RunCount
    fails: FailCount
    upper95: Upper95 = Field(description="The server's Wilson upper bound.")
    reported_upper95: Upper95 | None
    flags: list[rules.Flag]
    classification: rules.Classification | None = Field(
        description="What the client's measure command found the test to be, as uploaded; "
                    "null when the report did not say."
    )
    entry: EntryRef | None = Field(description="The ledger entry the gate used, if any.")
    url: NodePageUrl


class ReportAnswer(Answer):
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


class RecordOut(Answer):
    node: NodeId
    verdict: rules.Verdict
    reason: rules.Reason
    flags: list[rules.Flag]
    fixture_lock: rules.FixtureLock = Field(description="The effective fixture lock.")
    flake_status: rules.FlakeStatus = Field(description="The effective flake status.")
    entry: EntryRef | None = Field(description="The node's open ledger entry at upload.")
    url: NodePageUrl


class BatchAnswer(Answer):
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


class UploadSummary(Answer):
    id: int
    url: str = Field(description="The upload on the board.")
    api_url: str = Field(description="Its whole answer: what the upload answered.")
    created_at: datetime
    commit: str
    reason: rules.Reason
    exit_code: int


class ReportSummary(UploadSummary):
    branch: str
    status: rules.GateStatus
    counts: GateCounts


class BatchSummary(UploadSummary):
    patch: str
    verdict: rules.Verdict
    records: int = Field(ge=0)
    reason_counts: dict[rules.Reason, int]


class ReportPage(PagedOut):
    items: list[ReportSummary] = Field(description="Newest first.")


class BatchPage(PagedOut):
    items: list[BatchSummary] = Field(description="Newest first.")
