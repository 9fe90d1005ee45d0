"""The answer to an upload, the same for the API and the commands."""

from __future__ import annotations

from collections.abc import Callable

from django.urls import reverse

from flakeboard import rules
from ledger.models import KEY_LENGTH, text_key
from ledger.selectors import explain_violations

from .attempts import earlier_attempts
from .models import Report, VerdictBatch
from .outcomes import IngestOutcome
from .patches import patch_batches, patch_url

# The rows that pass: a report's OK measurements, a batch's ACCEPT records. Every other row
# fails the gate or warns, and links its node's page.
PASSING = {"measurements": ("status", rules.GateStatus.OK.value),
           "records": ("verdict", rules.Verdict.ACCEPT.value)}
NODE_FIELD = {"measurements": "nodeid", "records": "node"}


def link_nodes(rows: list[dict], rows_key: str, slug: str) -> list[dict]:
    """Set each row's ``url``: its node's page for a row that fails or warns, else None.
    The address is made once and each row's key put in it (one reverse per row cost more
    than the rest of a large answer)."""
    stand_in = "0" * KEY_LENGTH
    before, after = reverse("node", args=[slug, stand_in]).split(stand_in)
    field, passing = PASSING[rows_key]
    node = NODE_FIELD[rows_key]
    for row in rows:
        row["url"] = None if row[field] == passing else before + text_key(row[node]) + after
    return rows


# Each failed row's explanation (SPEC 2.4c) reads the evidence of every app, which only the
# board composes: its app gives the function here when Django starts (``board.apps``).
# Called with the suite, the failed nodes' ids and the batch's day; answers, by node id,
# ``{"label", "line", "evidence"}``.
FailuresExplained = Callable[..., dict[str, dict]]
_failures_explained: list[FailuresExplained] = []


def failures_explained_by(explain: FailuresExplained) -> None:
    _failures_explained[:] = [explain]


def failed_explained(rows: list[dict], batch: VerdictBatch) -> list[dict]:
    """Each row's ``failure``: for a node that failed in an attempt of the gate, the line
    that explains it to the patch's author, from the evidence the board holds now; None
    for every other row."""
    failed = [row["node"] for row in rows if row["attempts"]["failed_in"]]
    explained = (_failures_explained[0](batch.suite, failed, batch.day)
                 if failed and _failures_explained else {})
    for row in rows:
        row["failure"] = explained.get(row["node"])
    return rows


def _explained(rows: list[dict], suite) -> list[dict]:
    """The rows, their tier violations explained (the rule that voids each entry)."""
    explain_violations(suite, [row["entry"] for row in rows if row["entry"]])
    return rows


def _judged_against(upload) -> dict:
    return {
        "ledger_revision": upload.ledger_revision,
        "policy": upload.policy or None,
        "policy_hash": upload.policy_hash or None,
    }


def _upload_answer(outcome: IngestOutcome, page: str) -> dict:
    """What both answers say of the upload itself; ``page`` names its page's route."""
    upload = outcome.upload
    return {
        "id": upload.pk,
        "url": reverse(page, args=[upload.suite.slug, upload.pk]) if upload.pk else None,
        "duplicate": outcome.duplicate,
        "repeats_attempt": outcome.repeats,
        "dry_run": outcome.dry_run,
        "reason": upload.reason,
        "exit_code": upload.exit_code,
        "judged_against": _judged_against(upload),
    }


def gate_counts(report: Report) -> dict:
    """A report's measurements by the gate's status, as stored."""
    return {
        "measurements": report.measurement_count,
        "fail": report.fail_count,
        "warn": report.warn_count,
        "ok": report.measurement_count - report.fail_count - report.warn_count,
    }


def report_answer(outcome: IngestOutcome) -> dict:
    report = outcome.upload
    # The figures it was judged with, as stored; where the size came from is said as
    # stored too (empty for a report stored before it was kept), and the size the report
    # stated beside them, which decided nothing.
    share = rules.ShareFigures(report.quarantined, report.test_set_size, report.max_share)
    return {
        **_upload_answer(outcome, "report"),
        "status": report.status,
        "share": {**share.answer(), "size_source": report.size_source or None,
                  "size_commit": report.size_commit or None,
                  "selected_total": report.selected_total},
        "counts": gate_counts(report),
        "attempt": report.attempt,
        "earlier_attempts": earlier_attempts(report, replay=outcome.replay),
        "measurements": link_nodes(_explained(outcome.rows, report.suite), "measurements",
                                   report.suite.slug),
    }


def batch_answer(outcome: IngestOutcome) -> dict:
    batch = outcome.upload
    return {
        **_upload_answer(outcome, "batch"),
        "verdict": batch.verdict,
        "fixture_pin": (
            {"manifest": batch.pin_manifest, "seed": batch.pin_seed}
            if batch.pin_manifest else None
        ),
        "reason_counts": batch.reason_counts,
        "patch_url": _patch_page(batch),
        "attempt": batch.attempt,
        "infrastructure": batch.infrastructure,
        "infrastructure_signature": batch.infrastructure_signature or None,
        "earlier_attempts": earlier_attempts(batch, replay=outcome.replay),
        "records": failed_explained(
            link_nodes(_explained(outcome.rows, batch.suite), "records", batch.suite.slug),
            batch),
    }


def _patch_page(batch) -> str | None:
    """The batch's patch page; in a dry run, only once a stored batch names the patch."""
    stored = batch.pk or patch_batches(batch.suite, batch.patch).exists()
    return patch_url(batch.suite, batch.patch) if batch.patch and stored else None


def answer(outcome: IngestOutcome) -> dict:
    return report_answer(outcome) if isinstance(outcome.upload, Report) else batch_answer(outcome)


def summary_lines(outcome: IngestOutcome) -> list[str]:
    """A readable per-row summary, as the budget script prints it, then the result."""
    lines = []
    if isinstance(outcome.upload, Report):
        for m in outcome.rows:
            said = f"; classified {m['classification']}" if m["classification"] else ""
            if m["reason"] in rules.NEW_TEST_REASONS:
                counts = m["pooled"] or m
                lines.append(f"{m['status']:<4} {m['nodeid']}: {m['reason']} "
                             f"({rules.birth_sentence(counts['n'], counts['fails'])}; "
                             f"not a budget claim{said})")
                continue
            lines.append(f"{m['status']:<4} {m['nodeid']}: {m['reason']} "
                         f"(upper95={m['upper95']:.4f} over {m['n']} runs{said})")
        u = outcome.upload
        selected = "" if u.selected_total is None else f"; the report selected {u.selected_total}"
        lines.append(f"report {u.status} {u.reason}: exit {u.exit_code}; quarantined share "
                     f"{u.share:.1%} of {u.test_set_size} (cap {u.max_share:.1%}){selected}")
    else:
        for v in outcome.rows:
            lines.append(f"{v['verdict'].upper():<6} {v['node']}: {v['reason']}")
        u = outcome.upload
        lines.append(f"batch {u.verdict.upper()} {u.reason}: exit {u.exit_code}")
        if u.infrastructure:
            lines.append(f"(an infrastructure failure: {u.infrastructure_why}; its failures "
                         "count for the verdict, and no node flips on them)")
    gate = "patch and commit" if isinstance(outcome.upload, VerdictBatch) else "commit"
    if outcome.replay:
        lines.append(f"(a replay of attempt {outcome.repeats}: nothing stored; judged with "
                     f"every attempt at this {gate} now)")
    elif outcome.upload.attempt > 1:
        lines.append(f"(attempt {outcome.upload.attempt} at this {gate}: judged with the "
                     f"earlier ones)")
    if outcome.dry_run:
        lines.append("(dry run: nothing stored)")
    return lines
