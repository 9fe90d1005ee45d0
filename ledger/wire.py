"""The wire formats' field types, written once for every way a value comes in or goes out:
an upload (``runs/wire.py``), a flake_ledger.json row (``LedgerRow`` below) and the API's
answers.

Each type is built from the rules: its bounds from ``rules.limits``, its checks from
``rules.checks``, so a value is refused for exactly the reasons the rules give, and its
JSON schema (what the OpenAPI document says) is declared beside it from the same
constants. The types are strict: a boolean is not a number, a number is not a string,
"20261213" is not a date, and NaN and the infinities are not finite numbers.

A refusal is a pydantic error whose type is one of the board's error codes
(``ledger.refusals``), raised here or translated there; ``problems`` turns a ValidationError
into the ``{row, field, code, message}`` details that the API answers and the import prints.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    Field,
    PlainSerializer,
    PlainValidator,
    Strict,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
)

from flakeboard import rules
from ledger import messages

from .refusals import NODEID_CODES, TEXT_CODES, Code, WireProblem, problems, refusal, shown

# --- text ----------------------------------------------------------------------------------


def _nodeid(value: str) -> str:
    if (problem := rules.nodeid_problem(value)) is not None:
        code = NODEID_CODES.get(problem, Code.INVALID_NODEID)
        raise refusal(code, messages.phrase(problem, rules.NODEID_MAX_LENGTH))
    return value


def _label(max_length: int):
    def check(value: str) -> str:
        if (problem := rules.label_problem(value, max_length)) is not None:
            raise refusal(TEXT_CODES[problem], messages.phrase(problem, max_length))
        return value

    return AfterValidator(check)


def _blank_if_null(value: str | None) -> str:
    return "" if value is None else value


NodeId = Annotated[
    str, Strict(), AfterValidator(_nodeid),
    WithJsonSchema({"type": "string", "minLength": 1, "maxLength": rules.NODEID_MAX_LENGTH}),
]
Meta = Annotated[
    str, Strict(), _label(rules.META_MAX_LENGTH),
    WithJsonSchema({"type": "string", "maxLength": rules.META_MAX_LENGTH}),
]
# A commit: its one canonical form (``rules.commits``), then checked as any label, wherever
# one is read (an upload's metadata, a JUnit file's query, the queries that name one).
Commit = Annotated[
    str, Strict(), AfterValidator(rules.canonical_commit), _label(rules.META_MAX_LENGTH),
    WithJsonSchema({
        "type": "string", "maxLength": rules.META_MAX_LENGTH,
        "description": "The commit: read trimmed, and in lower case when it is hex (git's "
                       "hex is case-insensitive), so one commit is one gate however it is "
                       "spelled.",
    }),
]
Evidence = Annotated[
    str, Strict(), _label(rules.EVIDENCE_MAX_LENGTH),
    WithJsonSchema({"type": "string", "maxLength": rules.EVIDENCE_MAX_LENGTH}),
]


def _manifest(value: str) -> str:
    """A record's manifest digest, canonical (``rules.canonical_digest``); blank is none."""
    if value == "":
        return value
    if (problem := rules.digest_problem(value, rules.META_MAX_LENGTH)) is not None:
        code = TEXT_CODES.get(problem, Code.INVALID_VALUE)
        raise refusal(code, f"{messages.digest_phrase(problem, rules.META_MAX_LENGTH)} "
                            f"(got {shown(value)})")
    return rules.canonical_digest(value)


# A fixture manifest: the record's text checks, then a digest in either spelling.
Manifest = Annotated[
    str, Strict(), _label(rules.META_MAX_LENGTH), AfterValidator(_manifest),
    WithJsonSchema({
        "type": "string", "maxLength": rules.META_MAX_LENGTH,
        "pattern": "^(([Ss][Hh][Aa]256:)?[0-9A-Fa-f]+)?$",
        "description": "The fixture manifest's digest: hex digits, with or without sha256: "
                       "before them (stored as sha256: and lower-case hex); blank is none.",
    }),
]


def _trimmed(value: str) -> str:
    """A name read without the spaces around it; one of spaces only names nothing, and is
    refused rather than stored as a name no one can see."""
    trimmed = value.strip()
    if value and not trimmed:
        raise refusal(Code.INVALID_VALUE, "must not be only spaces (leave it out for none)")
    return trimmed


# A candidate patch's name: a label, read trimmed.
PatchName = Annotated[
    str, Strict(), _label(rules.META_MAX_LENGTH), AfterValidator(_trimmed),
    WithJsonSchema({
        "type": "string", "maxLength": rules.META_MAX_LENGTH,
        "description": "The candidate patch: read trimmed; a name of spaces only is refused.",
    }),
]
# Upload metadata and an import's owner and evidence: missing or null is blank.
OptionalMeta = Annotated[Meta | None, AfterValidator(_blank_if_null)]
OptionalPatch = Annotated[PatchName | None, AfterValidator(_blank_if_null)]
OptionalCommit = Annotated[Commit | None, AfterValidator(_blank_if_null)]
OptionalEvidence = Annotated[Evidence | None, AfterValidator(_blank_if_null)]
OptionalText = Annotated[Annotated[str, Strict()] | None, AfterValidator(_blank_if_null)]
# A reproduction command (a diagnosis experiment's): a label of its own length.
Command = Annotated[
    str, Strict(), _label(rules.COMMAND_MAX_LENGTH),
    WithJsonSchema({"type": "string", "maxLength": rules.COMMAND_MAX_LENGTH,
                    "description": "One shell command that reproduces the failure."}),
]

# --- numbers -------------------------------------------------------------------------------


def _at_most_n(fails: int, info: ValidationInfo) -> int:
    n = info.data.get("n")  # absent when n itself was refused
    if n is not None and fails > n:
        raise refusal(Code.OUT_OF_RANGE, f"fails ({fails}) must not exceed n ({n})")
    return fails


def _as_bound(value: object) -> object:
    # A JSON integer too large for a float is out of the range, not of the wrong type.
    if type(value) is int:
        try:
            return float(value)
        except OverflowError:
            pass
        raise refusal(Code.OUT_OF_RANGE, "must be between 0 and 1 (got a huge number)")
    return value


def _tier(value: object) -> object:
    if type(value) is int and value in rules.Tier.ALL:
        return value
    *first, last = rules.Tier.ALL
    tiers = f"{', '.join(map(str, first))} or {last}"
    raise refusal(Code.INVALID_VALUE, f"must be {tiers} (got {shown(value)})")


# n: the runs measured.
RunCount = Annotated[int, Strict(), Field(ge=1, le=rules.COUNT_MAX)]
# fails: of the runs; follows n in a model, which it may not exceed.
FailCount = Annotated[
    int, Strict(), Field(ge=0, le=rules.COUNT_MAX, description="At most n."),
    AfterValidator(_at_most_n),
]
Seed = Annotated[int, Strict(), Field(ge=rules.SEED_MIN, le=rules.SEED_MAX)]
# A diagnosis experiment's count of runs or failures: none is a count too.
ExperimentCount = Annotated[int, Strict(), Field(ge=0, le=rules.COUNT_MAX)]


def fails_of(runs: str):
    """A diagnosis experiment's failures: a count that may not exceed the count ``runs`` of
    the same object, which comes before it."""
    def check(fails: int, info: ValidationInfo) -> int:
        total = info.data.get(runs)  # absent when it was refused itself
        if total is not None and fails > total:
            raise refusal(Code.OUT_OF_RANGE, f"must not exceed {runs} ({total}; got {fails})")
        return fails

    return Annotated[ExperimentCount, AfterValidator(check), Field(
        description=f"Of them, those that failed (at most {runs}).")]
Upper95 = Annotated[
    float, Strict(), Field(ge=0, le=1, allow_inf_nan=False), BeforeValidator(_as_bound)
]
StatedTier = Annotated[
    Literal[rules.Tier.ALL], BeforeValidator(_tier),
    Field(description="The client's word for the node's tier: stored, and flagged "
                      "tier_disagrees where the suite's tier rules give another. It decides "
                      "nothing: the rules alone set a node's tier."),
]

# --- dates ---------------------------------------------------------------------------------

# date.fromisoformat also takes "20261213"; the wire formats write YYYY-MM-DD, and a bare
# number there is more likely a mistake than a date.
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_MOMENT_MAX_LENGTH = 40


def _iso_date(value: object) -> date:
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    if isinstance(value, str) and _ISO_DATE.fullmatch(value):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    raise refusal(Code.INVALID_DATE, f"must be a date written YYYY-MM-DD (got {shown(value)})")


def _moment_date(value: object) -> date:
    """An ISO date, or an ISO datetime taken as its UTC date."""
    if (
        isinstance(value, str) and len(value) <= _MOMENT_MAX_LENGTH
        and _ISO_DATE.match(value) and value[10:11] in ("", "T", " ")
    ):
        try:
            if len(value) == 10:
                return date.fromisoformat(value)
            moment = datetime.fromisoformat(value)
            if moment.tzinfo is not None:
                moment = moment.astimezone(UTC)
            return moment.date()
        except (ValueError, OverflowError):  # an offset can push year 1 or 9999 out of range
            pass
    raise refusal(Code.INVALID_DATE, f"must be an ISO date or datetime (got {shown(value)})")


# Written back as the ISO text it was read from (pydantic's own date serializer, behind a
# plain validator, warns that the value it is given is not a date).
_ISO_TEXT = PlainSerializer(date.isoformat, return_type=str, when_used="json")
IsoDate = Annotated[
    date, PlainValidator(_iso_date), _ISO_TEXT,
    WithJsonSchema({"type": "string", "format": "date"}),
]
MomentDate = Annotated[
    date, PlainValidator(_moment_date),
    WithJsonSchema({"anyOf": [{"type": "string", "format": "date"},
                              {"type": "string", "format": "date-time"}]}),
]

# --- answer parts both apps' answers share --------------------------------------------------


class PolicyOut(BaseModel):
    max_upper_rate: float
    min_runs: int
    max_quarantined_share: float
    max_quarantine_days: int


class FixturePinOut(BaseModel):
    manifest: str
    seed: Seed | None


# --- the import row ------------------------------------------------------------------------


class LedgerRow(BaseModel):
    """One entry of flake_ledger.json as the import reads it: what the file can get wrong
    and the quarantine service cannot see, each field's type and range. The domain (the
    tier, the owner's format, the expiry bounds, one open entry per node) is left to
    ``quarantine_create(imported=True)``, so the import and the form refuse the same things.
    """

    node: NodeId  # the entry's key in the file
    klass: Literal["flake"] = Field("flake", alias="class")
    n: RunCount
    fails: FailCount
    upper95: Upper95 | None = Field(None, description="The bound the file states.")
    seed_base: Seed | None = None
    expires: IsoDate
    # Missing or null is blank: the service then says what is required, as the form does.
    owner: OptionalText = ""
    evidence: OptionalEvidence = ""


def read_row(nodeid: str, entry: object) -> tuple[LedgerRow | None, list[WireProblem]]:
    """An entry of the file, keyed by ``nodeid``, as a LedgerRow; or the problems of all
    its fields (a problem of the whole entry has no field)."""
    data = {**entry, "node": nodeid} if isinstance(entry, dict) else entry
    try:
        return LedgerRow.model_validate(data), []
    except ValidationError as exc:
        return None, problems(exc)
