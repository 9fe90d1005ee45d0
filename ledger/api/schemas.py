"""The ledger endpoint's bodies, as the OpenAPI document describes them, with the wire's
field types (``ledger/wire.py``): the served entry is the row the import reads."""

from __future__ import annotations

from datetime import date, datetime
from typing import Literal

from ninja import Schema
from pydantic import ConfigDict, Field

from flakeboard import rules

from ..wire import FixturePinOut, IsoDate, NodeId, PolicyOut, Seed, Upper95


class LedgerEntry(Schema):
    """One entry of flake_ledger.json, exactly as the budget script reads it."""

    model_config = ConfigDict(populate_by_name=True)

    klass: Literal["flake"] = Field(alias="class")
    seed_base: Seed | None
    n: int = Field(ge=0)
    fails: int = Field(ge=0)
    upper95: Upper95 = Field(description="The server's Wilson upper bound.")
    owner: str
    expires: IsoDate
    evidence: str


class LedgerEntryFull(LedgerEntry):
    id: int = Field(description="The entry's id: its audit trail is "
                                "GET /api/v1/suites/{suite}/entries/{id}/events.")
    node: NodeId
    state: rules.EntryState
    renewals: int = Field(ge=0)
    age_days: int
    created: date
    upper95_mismatch: bool = Field(
        description="The bound reported when the entry was made differed from the server's."
    )
    ready_to_clear: bool = Field(
        description="Ready to clear: the node's last clear_after_clean_measurements "
        "measurements since the entry was made were each within budget. A flag beside the "
        "state, not a state."
    )
    ready_since: datetime | None = Field(description="When the entry became ready to clear.")
    ticket: str | None = Field(
        description="The URL of the entry's issue in the suite's tracker (docs/trackers.md).")
    ticket_closed_in_tracker: bool = Field(
        description="The tracker shows the issue closed while the entry is open; the entry "
        "stays open until its owner clears it.")


class TierViolation(LedgerEntryFull):
    tier: int = Field(ge=0, le=1)
    tier_rule: str | None = Field(
        description="The glob of the tier rule that made the node tier 0 or 1; null when "
        "no rule does any more (it was removed, or the tier dates from when a stated tier "
        "still decided)."
    )


class SuiteRef(Schema):
    slug: str
    name: str


class EntryStateCounts(Schema):
    active: int
    expiring: int
    expired: int
    tier_violation: int


class LedgerFull(Schema):
    """``?view=full``: the ledger with its states, the policy and the violations."""

    suite: SuiteRef
    generated_at: datetime
    today: date
    ledger_revision: int = Field(
        description="Bumped by every change to what the served ledger holds; an upload's "
        "answer names the revision it was judged against (judged_against.ledger_revision) "
        "and GET .../status the current one. The ledger's ETag changes with it."
    )
    policy: PolicyOut
    fixture_pin: FixturePinOut | None
    policy_hash: str = Field(
        pattern=r"^[0-9a-f]{16}$",
        description="A fingerprint of the policy's numbers, as an upload's answer gives "
        "the one it was judged against (judged_against.policy_hash): equal, the same policy."
    )
    policy_and_pin_hash: str = Field(
        pattern=r"^sha256:[0-9a-f]{64}$",
        description="sha256 of the policy's numbers and the fixture pin: with the revision "
        "and the day, what a gate result depends on."
    )
    clear_after_clean_measurements: int = Field(
        ge=1, description="How many measurements in a row within budget, since an entry was "
        "made, make it ready to clear."
    )
    counts: EntryStateCounts
    entries: list[LedgerEntryFull] = Field(
        description="The served entries (expired ones included), by node id."
    )
    violations: list[TierViolation] = Field(
        description="Open entries of nodes now tier 0 or 1: left out of the served ledger."
    )


LedgerMap = dict[str, LedgerEntry]


class TokenOut(Schema):
    suite: SuiteRef
    scope: Literal["read", "write"]
    name: str
    prefix: str
    created_at: datetime
    last_used_at: datetime | None


class StatusCauseOut(Schema):
    cause: rules.StatusCause
    count: int = Field(
        ge=0, description="Expired entries, tier violations, or entries over the share cap "
        "(how many must go for the share to be within it). The gate fails on any above 0."
    )
    text: str = Field(description="The count in words: “1 expired entry”.")
    url: str = Field(description="The ledger's rows behind the cause.")


class CiRunOut(Schema):
    commit: str
    branch: str = Field(description="The suite's default branch.")
    jobs: list[str] = Field(description="The jobs that uploaded JUnit for the commit.")
    tests: int = Field(description="Distinct tests over the jobs' files.")
    day: date = Field(description="The day of its last file.")


class ShareNowOut(Schema):
    quarantined: int = Field(description="Open, unexpired, non-violating entries.")
    test_set_size: int = Field(
        description="The tests of CI's last complete run on the default branch, or where "
                    "no JUnit says, the nodes the suite knows (SPEC 2.2; docs/test-set.md).")
    size_source: rules.SizeSource = Field(description="ci_run or known_nodes.")
    ci_run: CiRunOut | None = Field(description="The run that sized it (ci_run only).")
    share: float
    cap: float
    over_cap: bool
    headroom: int = Field(description="How many more entries fit under the cap.")


class StatusOut(Schema):
    suite: str
    today: date
    passing: bool
    summary: str = Field(description="One line: passing, or failing and its causes.")
    causes: list[StatusCauseOut]
    entries: EntryStateCounts = Field(description="Open entries per state.")
    share: ShareNowOut
    ledger_revision: int
    url: str = Field(description="The suite's overview on the board.")
