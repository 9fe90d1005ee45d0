"""Suite pages built on uploads: the overview, reports and verdict batches."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from ledger import selectors as ledger_selectors
from ledger.access import suite_for

from .models import Report, VerdictBatch
from .selectors import recent_uploads


@login_required
def overview(request, suite):
    suite = suite_for(request, suite)
    today = timezone.now().date()
    return render(
        request,
        "runs/overview.html",
        {
            "suite": suite,
            "today": today,
            "counts": ledger_selectors.entry_counts(suite, today),
            "share": ledger_selectors.share_figures(suite, today),
            **recent_uploads(suite),
        },
    )


@login_required
def report_detail(request, suite, pk):
    suite = suite_for(request, suite)
    report = get_object_or_404(Report, suite=suite, pk=pk)
    rows = report.measurements.select_related("node", "entry")
    return render(request, "runs/report.html", {"suite": suite, "report": report, "rows": rows})


@login_required
def batch_detail(request, suite, pk):
    suite = suite_for(request, suite)
    batch = get_object_or_404(VerdictBatch, suite=suite, pk=pk)
    rows = batch.verdicts.select_related("node")
    return render(request, "runs/batch.html", {"suite": suite, "batch": batch, "rows": rows})
