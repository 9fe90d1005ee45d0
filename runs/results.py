"""The answer to an upload, the same for the API and the commands."""

from __future__ import annotations

from django.urls import reverse

from .ingest import IngestOutcome
from .models import Report


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
        "dry_run": outcome.dry_run,
        "reason": upload.reason,
        "exit_code": upload.exit_code,
        "judged_against": _judged_against(upload),
    }


def report_answer(outcome: IngestOutcome) -> dict:
    report = outcome.upload
    return {
        **_upload_answer(outcome, "report"),
        "status": report.status,
        "share": {
            "quarantined": report.quarantined,
            "test_set_size": report.test_set_size,
            "size_source": report.size_source or None,
            "share": round(report.share, 6),
            "cap": report.max_share,
            "over_cap": report.cap_exceeded,
        },
        "counts": {
            "measurements": report.measurement_count,
            "fail": report.fail_count,
            "warn": report.warn_count,
            "ok": report.measurement_count - report.fail_count - report.warn_count,
        },
        "measurements": outcome.rows,
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
        "records": outcome.rows,
    }


def answer(outcome: IngestOutcome) -> dict:
    return report_answer(outcome) if isinstance(outcome.upload, Report) else batch_answer(outcome)


def summary_lines(outcome: IngestOutcome) -> list[str]:
    """A readable per-row summary, as the budget script prints it, then the result."""
    lines = []
    if isinstance(outcome.upload, Report):
        for m in outcome.rows:
            lines.append(f"{m['status']:<4} {m['nodeid']}: {m['reason']} "
                         f"(upper95={m['upper95']:.4f} over {m['n']} runs)")
        u = outcome.upload
        lines.append(f"report {u.status} {u.reason}: exit {u.exit_code}; quarantined share "
                     f"{u.share:.1%} of {u.test_set_size} (cap {u.max_share:.1%})")
    else:
        for v in outcome.rows:
            lines.append(f"{v['verdict'].upper():<6} {v['node']}: {v['reason']}")
        u = outcome.upload
        lines.append(f"batch {u.verdict.upper()} {u.reason}: exit {u.exit_code}")
    if outcome.duplicate:
        lines.append("(a duplicate of an earlier upload: the stored result)")
    if outcome.dry_run:
        lines.append("(dry run: nothing stored)")
    return lines
