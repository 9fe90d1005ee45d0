"""The JUnit upload service: a file validated whole, then stored with its results and
rollups in one transaction, under the suite's write lock (``ledger.locks.lock_suite``).

1. **parse**: the query (commit, branch, job, attempt) and the whole file
   (``junit.parse``); a refusal names the testcase and the field, and nothing is stored;
2. **resolve**: each testcase's node, new nodes created (``junit.nodes``: they do not
   join the known nodes);
3. **judge**: each test's attempts merged, its failure signature, whether the file is an
   infrastructure failure (``junit.rules``, ``flakeboard.rules.signatures``);
4. **store**: the file, its results, and unless it is an infrastructure failure the
   rollups and what they show (``junit.detect``) and, for a file of the default branch
   that the suite trusts to say so (``ledger.trust``), its tests added to its commit's CI
   run, which sizes the test set (``ledger.test_set``);
5. **answer**: from what was stored (``junit.answers``).

The same body with the same query is stored once: the second upload answers the stored
result, marked as a duplicate. Nothing here touches the gate's verdicts; a CI run changes
the quarantined share's test set, and a test that failed holds back its open entry's
ready-to-clear flag (``ledger.clearance.ci_failures_seen``).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from django.conf import settings
from django.db import connection
from django.utils import timezone
from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, field_validator

from flakeboard import rules as gate_rules
from flakeboard.rules.signatures import signature
from ledger.clearance import ci_failures_seen
from ledger.models import Suite
from ledger.refusals import Code, WireProblem, problems, refusal
from ledger.stored_once import stored_once
from ledger.test_set import ci_run_add
from ledger.trust import guarded_test_set, vouched
from ledger.wire import Commit, OptionalMeta
from web.bulk import cycle_collector_paused, insert_plain
from web.metrics import observed

from . import partitions
from .detect import FileContext, Findings, detect
from .models import CaseResult, JUnitFile
from .nodes import nodes_for_cases
from .parse import JUnitInvalid, ParsedFile, parse_junit
from .rules import ATTEMPTS_MAX, Outcome, Producer, failing_tests, merge_attempts

RESULT_COLUMNS = ("file_id", "node_id", "day", "position", "outcome", "attempts", "passes",
                  "failures", "flaky_failures", "duration", "message", "signature")


class UploadMeta(BaseModel):
    """What the query says of the file: the commit it tested (required), the branch, the
    CI job (one cell of a matrix) and the job's attempt (a re-run of the whole job)."""

    model_config = ConfigDict(extra="forbid")

    commit: Commit
    branch: OptionalMeta = ""
    job: OptionalMeta = ""
    attempt: Annotated[int, Strict(), Field(ge=1, le=gate_rules.COUNT_MAX)] = 1

    @field_validator("commit")
    @classmethod
    def _commit_given(cls, commit: str) -> str:
        if not commit:
            raise refusal(Code.MISSING_FIELD, "is required: the commit the tests ran on")
        return commit


@dataclass(frozen=True)
class JUnitOutcome:
    file: JUnitFile
    duplicate: bool = False


def upload_meta(query: dict) -> UploadMeta:
    try:
        return UploadMeta.model_validate({k: v for k, v in query.items() if v is not None})
    except ValidationError as exc:
        # The query's values, refused as every endpoint refuses a query parameter.
        raise JUnitInvalid("invalid_request", "", problems(exc), exc.error_count()) from None


def junit_digest(body: bytes, meta: UploadMeta, origin: str = "") -> str:
    """The same body with the same metadata is stored once; ``origin``, a verified CI
    token's run and attempt, is metadata too, so a retried job (GitLab's new job_id) is
    a new file even when its body is the same."""
    head = json.dumps({**meta.model_dump(), **({"signed_run": origin} if origin else {})},
                      sort_keys=True)
    return hashlib.sha256(b"junit\0" + head.encode() + b"\0" + body).hexdigest()


def _stored(suite: Suite, digest: str) -> JUnitOutcome | None:
    file = JUnitFile.objects.filter(suite=suite, digest=digest).first()
    return None if file is None else JUnitOutcome(file, duplicate=True)


@cycle_collector_paused()
@observed("junit", (JUnitInvalid,))
def junit_ingest(*, suite: Suite, body: bytes, actor: str, query: dict,
                 now: datetime | None = None,
                 credential: gate_rules.Credential = gate_rules.Credential.STATED,
                 signed: gate_rules.SignedFacts | None = None) -> JUnitOutcome:
    """Ingest one JUnit XML file (already inflated); JUnitInvalid when it is refused.
    ``credential`` is what vouches for its branch, and ``signed`` a verified CI token's
    facts, which win over the query's (``ledger.trust.vouched``)."""
    facts, found = vouched(suite, credential, signed,
                           {key: query[key] for key in ("branch", "commit", "attempt")
                            if key in query})
    if found:
        raise JUnitInvalid("validation_failed", "", found)
    meta = upload_meta({**query, **facts})
    parsed = parse_junit(body, max_cases=settings.UPLOAD_MAX_RECORDS)
    digest = junit_digest(body, meta, signed.origin if signed is not None else "")
    now = now or timezone.now()
    partitions.day_partition(now.date())  # before the upload's transaction: see there
    return stored_once(
        suite, lambda: _stored(suite, digest),
        lambda locked: _store(locked, parsed, meta, digest=digest, actor=actor, now=now,
                              credential=credential))


def _store(suite: Suite, parsed: ParsedFile, meta: UploadMeta, *, digest: str, actor: str,
           now: datetime, credential: gate_rules.Credential) -> JUnitOutcome:
    today = now.date()
    attempts, positions, names = defaultdict(list), {}, {}
    nodes = nodes_for_cases(suite, parsed.cases, meta.commit)
    for case, (node, nodeid) in zip(parsed.cases, nodes, strict=True):
        attempts[node].extend(case.attempts)
        positions.setdefault(node, case.position)
        names[node] = nodeid
    if repeated := [(positions[node], len(a)) for node, a in attempts.items()
                    if len(a) > ATTEMPTS_MAX]:
        raise JUnitInvalid("validation_failed", "", [WireProblem(
            Code.OUT_OF_RANGE, f"the test is repeated {count:,} times in the file: at most "
            f"{ATTEMPTS_MAX:,} attempts of one test are kept", position, "name")
            for position, count in repeated])
    copies_rerun = parsed.producer is Producer.PYTEST
    results = {node: merge_attempts(a, copies_rerun=copies_rerun) for node, a in attempts.items()}
    signatures = {node: signature(r.message) for node, r in results.items() if r.failures}
    share = suite.junit_infrastructure_share
    failing = failing_tests(list(results.values()))
    reason = gate_rules.infrastructure_reason(
        failing, share=share, errors_outside_tests=parsed.errors_outside_tests,
        signatures=[signatures.get(node, "") for node, r in results.items()
                    if r.ran and not r.passes])
    findings = Findings([], []) if reason else detect(
        FileContext(suite, meta.commit, meta.job, meta.branch, today), results, signatures)
    outcomes = Counter(r.outcome for r in results.values())
    sizing = gate_rules.upload_sizing(
        credential=credential, branch=meta.branch, default_branch=suite.default_branch,
        guarded=meta.branch == suite.default_branch and guarded_test_set(suite))
    file = JUnitFile.objects.create(
        suite=suite, created_at=now, day=today, commit=meta.commit, branch=meta.branch,
        job=meta.job, attempt=meta.attempt, uploaded_by=actor, digest=digest,
        producer=parsed.producer.value, testcases=len(results),
        passed=outcomes[Outcome.PASSED], failed=outcomes[Outcome.FAILED],
        error=outcomes[Outcome.ERROR], skipped=outcomes[Outcome.SKIPPED],
        reruns=sum(r.reruns for r in results.values()),
        flaky_in_file=sum(r.flaky for r in results.values()),
        failing_share=float(failing.share),
        infrastructure_share=share, infrastructure_reason=reason.value if reason else "",
        newly_flaky=[names[node] for node in findings.newly_flaky],
        differs_by_job=[names[node] for node in findings.differs_by_job],
        test_set_untrusted=sizing is gate_rules.Sizing.UNTRUSTED,
    )
    day, file_id = connection.ops.adapt_datefield_value(today), file.pk
    insert_plain(CaseResult, RESULT_COLUMNS, [
        (file_id, node, day, positions[node], r.outcome.value, r.attempts,
         r.passes, r.failures, findings.flaky_failures.get(node, 0), r.duration, r.message,
         signatures.get(node, ""))
        for node, r in results.items()
    ])
    if not reason:
        # A broken runner's file does not say which tests CI runs, nor which of them fail;
        # an unvouched one is evidence of what failed, not of which tests CI runs.
        if sizing is gate_rules.Sizing.SIZES:
            ci_run_add(suite, branch=meta.branch, commit=meta.commit, job=meta.job,
                       nodes=results.keys(), at=now)
        ci_failures_seen(suite=suite, source="junit", commit=meta.commit, now=now,
                         nodes=[node for node, result in results.items() if result.failures])
    return JUnitOutcome(file)
