"""Reads of uploads: recent reports and batches."""

from ledger.models import Suite

from .models import Report, VerdictBatch


def recent_uploads(suite: Suite, limit: int = 5) -> dict:
    return {
        "recent_reports": list(Report.objects.filter(suite=suite)[:limit]),
        "recent_batches": list(VerdictBatch.objects.filter(suite=suite)[:limit]),
    }
