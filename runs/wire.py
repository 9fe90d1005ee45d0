"""The upload wire formats (SPEC 3.1 and 3.2): one set of models that validates an upload
whole, before anything is stored, and describes it in the OpenAPI document.

Their field types are the ledger's (``ledger/wire.py``), shared with the import and the
API's answers. A bare list is the envelope with its metadata taken from the query, so one
model validates both forms, the whole list in one call; each error becomes a
``{row, field, code, message}`` detail, at most MAX_ERRORS of them.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from pydantic.dataclasses import dataclass

from flakeboard import rules
from flakeboard.rules.signatures import SIGNATURE_MAX_LENGTH, signature
from ledger.refusals import (
    MAX_ERRORS,
    Code,
    UploadInvalid,
    WireProblem,
    kind_of,
    load_json,
    problems,
    refusal,
    refuse_repeats,
    refuse_too_many,
)
from ledger.wire import (
    Command,
    ExperimentCount,
    FailCount,
    Manifest,
    MomentDate,
    NodeId,
    OptionalCommit,
    OptionalEvidence,
    OptionalMeta,
    OptionalPatch,
    RunCount,
    Seed,
    StatedTier,
    Upper95,
    fails_of,
)

RiskyLines = Annotated[int, Strict(), Field(ge=0, le=rules.COUNT_MAX)]


def _of_a_failure(text: str, info: ValidationInfo) -> str:
    check = info.data.get("property_check")  # absent when refused itself
    if text and check not in (None, rules.PropertyCheck.FAIL):
        raise refusal(Code.INVALID_VALUE, "goes with the property_check fail only")
    return signature(text)  # a signature is its own; a raw message becomes one


FailureSignature = Annotated[str, Strict(), Field(max_length=SIGNATURE_MAX_LENGTH),
                             AfterValidator(_of_a_failure)]


@dataclass(frozen=True)
class OrderCause:
    """The tests the client's measure command found an order_dependent test to depend on,
    by delta debugging over the tests run before it."""

    role: rules.CauseRole = Field(
        description="polluter: the test fails only after these tests (it is their victim); "
                    "state_setter: it passes only after them (it needs what they leave)."
    )
    nodes: list[NodeId] = Field(
        description=f"The smallest set of tests that flips it, in the order they ran: one "
                    f"test, or those needed together (1 to {rules.CAUSE_NODES_MAX}).",
    )
    complete: Annotated[bool, Strict()] = Field(
        True, description="false when the bisection stopped at the client's --bisect-max: "
                          "the cause is among these tests, not all of them.",
    )


def _cause_of_order_dependent(cause: OrderCause | None, info: ValidationInfo):
    if cause is None:
        return cause
    # A classification refused itself is absent here, and the row's one problem.
    kind = info.data.get("classification", rules.Classification.ORDER_DEPENDENT)
    if kind is not rules.Classification.ORDER_DEPENDENT:
        raise refusal(Code.INVALID_VALUE, "goes with the classification order_dependent only")
    if not 1 <= len(cause.nodes) <= rules.CAUSE_NODES_MAX:
        raise refusal(Code.OUT_OF_RANGE, f"nodes must name 1 to {rules.CAUSE_NODES_MAX} tests "
                                         f"(got {len(cause.nodes)})")
    if info.data.get("nodeid") in cause.nodes:
        raise refusal(Code.INVALID_VALUE, "names the measured test itself")
    if len(set(cause.nodes)) < len(cause.nodes):
        repeated = next(node for node in cause.nodes if cause.nodes.count(node) > 1)
        raise refusal(Code.INVALID_VALUE, f"nodes names {repeated} more than once: each test "
                                          f"of the cause once, in the order they ran")
    return cause


# --- a row's diagnosis experiments (SPEC 2.4d, docs/diagnosis.md) ----------------------------
# A closed vocabulary: an unknown key at any level is refused, not ignored.
CLOSED = ConfigDict(extra="forbid")


def _replayed_seeds(seeds: list[int]) -> list[int]:
    if not 1 <= len(seeds) <= rules.REPLAY_SEEDS_MAX:
        raise refusal(Code.OUT_OF_RANGE, f"must name 1 to {rules.REPLAY_SEEDS_MAX} seeds "
                                         f"(got {len(seeds)})")
    return seeds


def _as_many_controls(controls: list[int], info: ValidationInfo) -> list[int]:
    seeds = info.data.get("seeds")  # absent when refused itself
    if seeds is not None and len(controls) != len(seeds):
        raise refusal(Code.INVALID_VALUE, f"must name as many seeds as seeds ({len(seeds)}; "
                                          f"got {len(controls)})")
    return controls


@dataclass(frozen=True, config=CLOSED)
class SeededIn:
    """The failing seeds replayed, each twice in a fresh process, and as many passing seeds
    replayed as controls."""

    seeds: Annotated[list[Seed], AfterValidator(_replayed_seeds)] = Field(
        description=f"The failing seeds replayed (1 to {rules.REPLAY_SEEDS_MAX}).")
    controls: Annotated[list[Seed], AfterValidator(_as_many_controls)] = Field(
        description="The passing seeds replayed as controls, as many as seeds.")
    seed_runs: ExperimentCount = Field(description="Replays at the failing seeds.")
    seed_fails: fails_of("seed_runs") = Field()
    control_runs: ExperimentCount = Field(description="Replays at the control seeds.")
    control_fails: fails_of("control_runs") = Field()
    command: Command | None = Field(
        None, description="The reproduction: the replay at a failing seed.")


@dataclass(frozen=True, config=CLOSED)
class LoadIn:
    """The measurement's own runs against a block of runs under CPU stress (one busy
    process per core)."""

    idle_n: ExperimentCount = Field(description="The measurement's own runs, no stress.")
    idle_fails: fails_of("idle_n") = Field()
    load_n: ExperimentCount = Field(description="The runs under CPU stress.")
    load_fails: fails_of("load_n") = Field()
    command: Command | None = Field(
        None, description="The reproduction: the runs under stress.")


@dataclass(frozen=True, config=CLOSED)
class ExperimentsIn:
    """The client's diagnosis experiments on the measured test: each key present only when
    that experiment ran."""

    seeded: SeededIn | None = Field(None, description="The seed replay.")
    load: LoadIn | None = Field(None, description="The runs under CPU load.")
    skipped: Literal[rules.SKIPPED] | None = Field(
        None, description="budget: --diagnose-budget ran out; disabled: --no-diagnose. "
                          "Absent when every experiment that applied ran.")

    def stored(self) -> dict:
        """As the measurement stores it (``rules.Experiments.from_wire`` reads it back):
        the experiments that ran, and the skip."""
        return {key: value for key, value in asdict(self).items() if value is not None}


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
    cause: Annotated[OrderCause | None, AfterValidator(_cause_of_order_dependent)] = Field(
        None, description="Optional, with order_dependent only: the tests it depends on."
    )
    experiments: ExperimentsIn | None = Field(
        None, description="Optional: the client's diagnosis experiments on a flaky or "
        "suspect test (seed replay, runs under CPU load), from which the board diagnoses "
        "why it is flaky (docs/diagnosis.md)."
    )
    new_test: Annotated[bool, Strict()] = Field(
        False, description="Optional: the new-test guard's runs of a node new at the "
        "report's commit (gate --measure; docs/new-tests.md), which it needs: in a report "
        "without a commit it is refused. Judged by the guard while the board finds the "
        "node new: a flip FAILs new_test_flaky, a clean short measurement passes as "
        "new_test_clean. Otherwise the row is gated as any other."
    )


@dataclass(frozen=True)
class SignalRecordIn(rules.SignalRecord):
    """One node's typed gate signals for a candidate patch."""

    node: NodeId
    property_check: rules.PropertyCheck
    fixture_lock: rules.FixtureLock
    flake_status: rules.FlakeStatus
    fixture_manifest: Manifest | None = None
    seed: Seed | None = None
    freeze_expires: MomentDate | None = None
    tier: StatedTier | None = None
    failure_signature: FailureSignature = Field(
        "", description="Optional, with property_check fail only: the failure's signature "
        "(its message's first line with numbers, times, paths and ids replaced, as the board "
        "signs a JUnit failure; the client's gate sends it). When every failed record of an "
        "attempt, at least 3, carries one and the same, the attempt is an infrastructure "
        "failure (its runner broke), whatever its failing share.")


# --- envelopes -----------------------------------------------------------------------------


class _Envelope(BaseModel):
    """An upload's metadata, then its rows (``ROWS``), each naming its node (``NODE``)
    at most once."""

    ROWS: ClassVar[str]
    NODE: ClassVar[str]

    commit: OptionalCommit = ""
    evidence: OptionalEvidence = Field("", description="A CI run reference or an http(s) URL.")

    @model_validator(mode="after")
    def _each_node_once(self):
        refuse_repeats(getattr(self, self.ROWS), self.ROWS, self.NODE)
        return self


class ReportEnvelope(_Envelope):
    ROWS, NODE = "measurements", "nodeid"

    branch: OptionalMeta = ""
    selected_total: RunCount | None = Field(
        None, description="How many tests the job selected: stored and shown beside the "
        "board's own test set, never the quarantined share's denominator."
    )
    measurements: list[MeasurementIn]

    @model_validator(mode="after")
    def _new_tests_need_a_commit(self):
        """A node is new at a commit (SPEC 2.4b): a new-test row in a report without one
        is refused where it stands, since no later report could tell its birth apart."""
        if not self.commit:
            refuse_new_tests_without_a_commit(self.measurements, self.ROWS)
        return self


class SignalsEnvelope(_Envelope):
    ROWS, NODE = "records", "node"

    patch: OptionalPatch = ""
    deselected_frozen: list[NodeId] = Field(
        default_factory=list,
        description="The frozen nodes the client's gate left out of the run and the batch "
                    "(--deselect-frozen): stored and shown, so that the choice is visible.",
    )
    patch_class: rules.PatchClass | None = Field(
        None, description="The client's gate --diff: how much the patch touches concurrency "
                          "or time. Stored and shown; a riskier class only made the client "
                          "measure more.",
    )
    risky_lines: RiskyLines | None = Field(
        None, description="The patch's added source lines that touch concurrency or time.",
    )
    records: list[SignalRecordIn]


def refuse_new_tests_without_a_commit(rows: list[MeasurementIn], rows_key: str) -> None:
    """Every ``new_test`` row of a report without a commit, refused at its row and field."""
    refused = [{
        "type": refusal(Code.INVALID_VALUE, "true needs the report's commit (the envelope's "
                                            "commit, or ?commit=): a node is new at a commit"),
        "loc": (rows_key, index, "new_test"),
        "input": True,
    } for index, row in enumerate(rows) if row.new_test]
    if refused:
        raise ValidationError.from_exception_data("upload", refused)


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
    if max_records is not None and isinstance(rows, list):
        refuse_too_many(rows, envelope.ROWS, max_records, field=envelope.ROWS)
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
