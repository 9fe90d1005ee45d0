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
from runs.wire import OrderCause
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
        description="ci_run (the tests of CI's last complete run on the suite's default "
                    "branch, from its JUnit files) or known_nodes (the nodes the gate's "
                    "uploads named, where no JUnit says); selected_total only on a report "
                    "stored while a stated size still decided."
    )
    size_commit: str | None = Field(
        default=None, description="The commit of the CI run that sized it (ci_run only).")
    selected_total: int | None = Field(
        default=None, description="The number of tests the report said its job selected, "
                                  "as stated: shown beside the test set, never its size.")
    share: float
    cap: float
    over_cap: bool


class JudgedAgainstOut(Answer):
    ledger_revision: int | None = Field(
        description="The served ledger's revision the answer was judged against: the "
                    "`ledger_revision` of the ledger's full view and of GET .../status."
    )
    policy: PolicyOut | None = Field(description="The suite's policy at upload.")
    policy_hash: str | None = Field(
        description="A fingerprint of the policy's numbers: the full ledger's `policy_hash` "
                    "while the policy is the same.")


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
                    "tier 0 or 1; null otherwise (and in an answer stored while a stated tier "
                    "still decided)."
    )


class PooledOut(Answer):
    n: int = Field(description="Runs at this commit, each seed counted once.")
    fails: int = Field(description="Failures among them: where two reports ran the same "
                                   "seeds, the larger count.")
    upper95: Upper95 = Field(description="The Wilson bound of the pooled counts, which the "
                                         "gate judged.")
    reports: list[int] = Field(description="The earlier reports at this commit whose "
                                           "measurements of the node pooled with this one.")


class EarlierBatchOut(Answer):
    attempt: int
    id: int
    url: str = Field(description="The attempt's batch on the board.")
    verdict: rules.Verdict = Field(description="Its verdict, over the attempts up to it.")


class EarlierReportOut(Answer):
    attempt: int
    id: int
    url: str = Field(description="The report on the board.")
    status: rules.GateStatus = Field(description="Its status, over the reports up to it.")


class DiagnosisOut(Answer):
    """Why a flaky test is flaky (SPEC 2.4d, docs/diagnosis.md)."""

    category: rules.Category = Field(
        description="The first that holds of order_dependent, seeded, repeat_unsafe, timing, "
                    "external, job_specific and ci_only; unknown when none does.")
    evidence: list[str] = Field(
        description="Each category that holds, strongest first, as a sentence with its "
                    "numbers (the first decided the category); empty for unknown.")
    command: str | None = Field(
        description="The reproduction, where one exists: the replay at a failing seed, or "
                    "the runs under CPU stress; null otherwise.")
    tried: list[str] = Field(
        description="What was looked at: seed replay, CPU load, CI jobs, CI against measured "
                    "rate, failure signatures; and why the client's experiments were cut "
                    "short or skipped, when they were.")


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
    cause: OrderCause | None = Field(
        description="For an order_dependent test, the tests it depends on, as uploaded; null "
                    "when the report did not say."
    )
    pooled: PooledOut = Field(
        description="The node's measurements at this commit pooled (SPEC 2.4a): what the gate "
                    "judged. Equal to this measurement's own counts when it is the first."
    )
    entry: EntryRef | None = Field(description="The ledger entry the gate used, if any.")
    url: NodePageUrl
    diagnosis: DiagnosisOut | None = Field(
        description="Why the test is flaky, for a row classified flaky, order_dependent or "
                    "repeat_unsafe, or unclassified with a failed run: from this row's "
                    "classification and experiments and what CI's JUnit files show of the "
                    "node now; null for every other row (docs/diagnosis.md).")


DUPLICATE = (
    "The same body was uploaded before, and is stored once: this upload stored nothing. "
    "Its answer is the gate as it stands now, over every attempt at the same patch and "
    "commit (a report: its measurements pooled over every report at the commit), never "
    "the verdict the body had when first stored."
)
REPEATS_ATTEMPT = (
    "For a duplicate, the stored attempt whose body it is (its `id`, `url` and `attempt`); "
    "null for an upload stored now and for a dry run."
)


class UploadAnswer(Answer):
    """What a report's and a batch's answers begin with: the upload stored, or not."""

    id: int | None = Field(description="null in a dry run.")
    url: str | None = Field(description="The upload's page on the board; null in a dry run.")
    duplicate: bool = Field(description=DUPLICATE)
    repeats_attempt: int | None = Field(description=REPEATS_ATTEMPT)
    dry_run: bool


class ReportAnswer(UploadAnswer):
    status: rules.GateStatus
    reason: rules.Reason
    exit_code: Literal[0, 1]
    judged_against: JudgedAgainstOut
    share: ShareOut
    counts: GateCounts
    attempt: int = Field(
        description="Which report at this commit this is (from 1). Each node is judged on "
                    "its measurements in all of them, pooled: see each row's `pooled`."
    )
    earlier_attempts: list[EarlierReportOut] = Field(
        description="The reports before this one at the same commit, first first; for a "
                    "replay, every other report at the commit (it is pooled with them all)."
    )
    measurements: list[MeasurementOut]


class AttemptsOut(Answer):
    """A node's attempts at the batch's patch and commit, up to this one (SPEC 2.4a): its
    verdict judges all of them, so a retry never forgets a failure."""

    runs: int = Field(description="Attempts that held a record of the node.")
    failed_in: list[int] = Field(description="The attempts (numbered from 1) where it failed.")
    passed_in: list[int] = Field(description="The attempts where it passed. A node in both "
                                             "lists flipped: flaky evidence.")
    infrastructure_in: list[int] = Field(
        default_factory=list,
        description="Of its attempts, those that were infrastructure failures (the batch's "
                    "`infrastructure`): counted for the verdict, never flaky evidence.")


class EntryEvidenceOut(Answer):
    owner: str
    expires: IsoDate


class FlakyEvidenceOut(Answer):
    rate: float = Field(ge=0, le=1, description="Its flaky failures per run.")
    upper95: Upper95
    since: IsoDate = Field(description="Its first flaky day in the window.")
    diagnosis: str = Field(description="Its latest measurement's diagnosis where it names "
                                       "one (order_dependent, repeat_unsafe); empty if none.")


class FailureEvidenceOut(Answer):
    entry: EntryEvidenceOut | None = Field(description="Its live ledger entry, if any.")
    flaky: FlakyEvidenceOut | None = Field(
        description="Its flaky evidence as the flaky-tests page holds it over the last 30 "
                    "days (a flip between gate attempts, flaky at birth, or flaky failures "
                    "in JUnit files), if any.")
    default_failures: list[str] = Field(
        description="The commits (12 characters) of its failed JUnit results on the suite's "
                    "default branch among the last kept, newest first.")
    passed_on_default: bool | None = Field(
        description="Whether its last JUnit result on the default branch passed; null: the "
                    "board holds no result of it there.")


class FailureOut(Answer):
    """Why a failed node failed, as far as the board knows (SPEC 2.4c)."""

    label: Literal[rules.FAILURE_LABELS] = Field(  # type: ignore[valid-type]
        description="quarantined, known_flaky, failing_on_default or new_failure: the first "
                    "that holds, in that order.")
    line: str = Field(description="The one line the CI client prints under the node.")
    evidence: FailureEvidenceOut


class RecordOut(Answer):
    node: NodeId
    verdict: rules.Verdict
    reason: rules.Reason
    flags: list[rules.Flag]
    fixture_lock: rules.FixtureLock = Field(description="The effective fixture lock.")
    flake_status: rules.FlakeStatus = Field(description="The effective flake status.")
    attempts: AttemptsOut
    sent: bool = Field(description="false: this upload did not name the node; it is judged "
                                   "on the earlier attempts at this patch and commit.")
    entry: EntryRef | None = Field(description="The node's open ledger entry at upload.")
    url: NodePageUrl
    failure: FailureOut | None = Field(
        description="For a node that failed in an attempt of this gate: its label and the "
                    "line that explains it, from the evidence the board holds now (its live "
                    "entry, its flaky evidence, its JUnit results on the default branch); "
                    "null for every other row.")


class BatchAnswer(UploadAnswer):
    verdict: rules.Verdict
    reason: rules.Reason
    exit_code: Literal[0, 1, 2] = Field(description="accept 0, reject 1, hold 2.")
    judged_against: JudgedAgainstOut
    fixture_pin: FixturePinOut | None = Field(description="The suite's pin at upload.")
    reason_counts: dict[rules.Reason, int]
    patch_url: str | None = Field(
        description="The patch's page on the board: each commit of the patch and its "
                    "attempts. null when the batch names no patch, and in a dry run of a "
                    "patch the board holds no batch of."
    )
    attempt: int = Field(
        description="Which attempt of the gate at this patch and commit the batch is (from "
                    "1). Its verdict judges every node over all attempts up to it: a node "
                    "that failed in any of them still fails."
    )
    infrastructure: bool = Field(
        description="This attempt is an infrastructure failure: more than the suite's "
                    "infrastructure share (as for a JUnit file) of the nodes it ran failed, "
                    "at least 10 of them ran; or every record it failed, at least 3, "
                    "carried one and the same failure_signature. Its failures count for the "
                    "verdict, this attempt's and every later one's; they are never flaky "
                    "evidence, so no node flips on them."
    )
    infrastructure_signature: str | None = Field(
        description="The one failure signature that made this attempt an infrastructure "
                    "failure (null: none did)."
    )
    earlier_attempts: list[EarlierBatchOut] = Field(
        description="The attempts before this one at the same patch and commit, first "
                    "first; for a replay, every other attempt there (it is judged with them "
                    "all)."
    )
    records: list[RecordOut]


class RetriesOut(Answer):
    """Retries at one commit (SPEC 2.4a), per bucket as ``buckets`` lists them."""

    after_reject: list[int] = Field(
        description="Verdict batches whose previous attempt at the same patch and commit was "
                    "already REJECT."
    )
    flips: list[int] = Field(
        description="Nodes that failed in one attempt and passed in another at the same patch "
                    "and commit, each counted once, in the bucket of the attempt where it "
                    "first flipped."
    )


class BirthsOut(Answer):
    flaky: list[int] = Field(description="New tests flaky at birth (new_test_flaky), each "
                                         "once, in the bucket of its first such report.")
    measured: list[int] = Field(description="New tests the new-test guard measured, each "
                                            "once, in the bucket of its first such report.")


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
    retries: RetriesOut | None = Field(
        None, description="For source verdicts: the retries at one commit per bucket; null for "
                          "source reports."
    )
    births: BirthsOut | None = Field(
        None, description="For source reports: the new tests measured at birth per bucket "
                          "(docs/new-tests.md); null for source verdicts."
    )


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
