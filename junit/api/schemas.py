"""The answer of the JUnit endpoint, as the OpenAPI document describes it: exactly the
keys ``junit.answers`` makes (an extra one is refused, not silently dropped)."""

from __future__ import annotations

from pydantic import Field

from flakeboard.rules import InfrastructureReason
from ledger.wire import Meta, NodeId
from web.api.schemas import Answer

from ..rules import Producer


class JUnitCounts(Answer):
    testcases: int = Field(description="Tests in the file, each counted once.")
    passed: int = Field(description="Tests whose last attempt passed.")
    failed: int
    error: int
    skipped: int
    reruns: int = Field(description="Attempts beyond each test's first (reruns, retries).")
    flaky_in_file: int = Field(description="Tests that both passed and failed in this file.")


class JUnitAnswer(Answer):
    id: int
    url: str | None = Field(description="Always null: a JUnit file has no page of its own.")
    duplicate: bool = Field(description="The same body and query were uploaded before: "
                                        "the stored result.")
    commit: Meta
    branch: Meta
    job: Meta
    attempt: int = Field(ge=1)
    producer: Producer = Field(description="Who wrote the file, as the board read it.")
    counts: JUnitCounts
    infrastructure: bool = Field(
        description="The file is an infrastructure failure: stored, and left out of "
                    "flaky-test detection.")
    infrastructure_reason: InfrastructureReason | None = Field(
        description="error_outside_tests, or failing_share: more than the suite's share of "
                    "the tests that ran never passed.")
    failing_share: float = Field(ge=0, le=1,
                                 description="Of the tests that ran, those that never passed.")
    infrastructure_share: float = Field(ge=0, le=1, description="The suite's share at upload.")
    newly_flaky: list[NodeId] = Field(
        description="Tests newly flaky on the commit with this file: a pass and a failure "
                    "in one job (its attempts and reruns), which no other job had shown.")
    newly_flaky_count: int
    differs_by_job: list[NodeId] = Field(
        description="Tests of this file that passed in one job of the commit and failed in "
                    "another, none flaky in a job: a likely platform dependence, not flaky.")
    sizes_test_set: bool = Field(
        description="Its tests count in its commit's CI run, which sizes the quarantined "
                    "share's test set: a file of the suite's default branch, not an "
                    "infrastructure failure, and on a suite that keeps a default-branch-only "
                    "token, sent with one (docs/test-set.md, docs/trusted-ci.md).")
    flags: list[str] = Field(
        description="test_set_untrusted: the file states the default branch, but the suite "
                    "keeps a default-branch-only token and this file was not sent with one; "
                    "it is stored as evidence and never sizes the test set.")
    summary: str
