"""Suite pages built on uploads: the overview, reports, verdict batches and a node's history."""

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from flakeboard import rules
from ledger import selectors as ledger_selectors
from ledger.access import can, suite_for
from ledger.models import Node, Role
from ledger.views_common import (
    PER_PAGE,
    EntryRow,
    entry_row,
    render_page,
    share_context,
    wants_partial,
)

from . import selectors
from .models import Report, VerdictBatch
from .trends import OVERVIEW_DAYS, overview_chart

ROWS_PER_PAGE = 100
STATUSES = [s.value for s in rules.GateStatus]
VERDICTS = [v.value for v in rules.Verdict]


def _choice(request, name: str, allowed) -> str:
    value = request.GET.get(name, "")
    return value if value in allowed else ""


@login_required
@require_GET
def overview(request, suite):
    suite = suite_for(request, suite)
    today = timezone.now().date()
    share = ledger_selectors.share_figures(suite, today)
    return render(
        request,
        "runs/overview.html",
        {
            "suite": suite,
            "nav": "overview",
            "today": today,
            "counts": ledger_selectors.entry_counts(suite, today),
            "share": share,
            **share_context(share.share, share.cap),
            "reason_chart": overview_chart(suite, today),
            "reason_chart_query": urlencode({"range": OVERVIEW_DAYS, "bucket": "day"}),
            **selectors.recent_uploads(suite),
        },
    )


@login_required
@require_GET
def reports(request, suite):
    suite = suite_for(request, suite)
    status = _choice(request, "status", STATUSES)
    uploads = Report.objects.filter(suite=suite)
    if status:
        uploads = uploads.filter(status=status)
    page = Paginator(uploads, PER_PAGE).get_page(request.GET.get("page"))
    context = {"suite": suite, "nav": "reports", "page": page, "status": status,
               "statuses": STATUSES}
    return render_page(request, "runs/reports.html", context, partial="results")


def _quarantine_url(request, suite, report, m) -> str:
    """The create form, prefilled with the measurement and a link to its row as evidence."""
    report_url = request.build_absolute_uri(reverse("report", args=[suite.slug, report.pk]))
    upper = m.reported_upper95 if m.reported_upper95 is not None else round(m.upper95, 4)
    query = {"node": m.node.nodeid, "n": m.n, "fails": m.fails, "upper95": upper,
             "evidence": f"{report_url}#m{m.position}"}
    if m.seed_base is not None:
        query["seed_base"] = m.seed_base
    return f"{reverse('entry_new', args=[suite.slug])}?{urlencode(query)}"


def _entry_at_upload(row, day) -> EntryRow | None:
    """The row's entry as the gate saw it at upload (None for rows stored before the state
    was kept: the page then says nothing rather than today's state)."""
    if row.entry_id is None or not row.entry_state:
        return None
    return EntryRow(row.entry, rules.EntryState(row.entry_state), day)


@login_required
@require_GET
def report_detail(request, suite, pk):
    suite = suite_for(request, suite)
    report = get_object_or_404(Report, suite=suite, pk=pk)
    status = _choice(request, "status", STATUSES)
    page = Paginator(selectors.report_measurements(report, status), ROWS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    today = timezone.now().date()
    can_edit = can(request.role, Role.OWNER)
    rows = [
        (row, _entry_at_upload(row.measurement, report.day),
         entry_row(row.entry, today) if row.entry else None,
         _quarantine_url(request, suite, report, row.measurement) if can_edit else "")
        for row in selectors.report_rows(suite, page)
    ]
    context = {
        "suite": suite,
        "nav": "reports",
        "report": report,
        "evidence_is_link": rules.evidence_is_link(report.evidence),
        "ok_count": report.measurement_count - report.fail_count - report.warn_count,
        "over_cap": report.cap_exceeded,
        **share_context(report.share, report.max_share),
        "page": page,
        "rows": rows,
        "status": status,
        "statuses": STATUSES,
        "can_edit": can_edit,
    }
    return render_page(request, "runs/report.html", context, partial="results")


@login_required
@require_GET
def batches(request, suite):
    suite = suite_for(request, suite)
    verdict = _choice(request, "verdict", VERDICTS)
    uploads = VerdictBatch.objects.filter(suite=suite)
    if verdict:
        uploads = uploads.filter(verdict=verdict)
    page = Paginator(uploads, PER_PAGE).get_page(request.GET.get("page"))
    context = {"suite": suite, "nav": "verdicts", "page": page, "verdict": verdict,
               "verdicts": VERDICTS}
    return render_page(request, "runs/verdicts.html", context, partial="results")


@login_required
@require_GET
def batch_detail(request, suite, pk):
    suite = suite_for(request, suite)
    batch = get_object_or_404(VerdictBatch, suite=suite, pk=pk)
    reasons = sorted(batch.reason_counts.items(), key=lambda item: (-item[1], item[0]))
    verdict = _choice(request, "verdict", VERDICTS)
    reason = _choice(request, "reason", [r.value for r in rules.Reason])
    rows = selectors.batch_verdicts(batch, verdict=verdict, reason=reason)
    page = Paginator(rows, ROWS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "suite": suite,
        "nav": "verdicts",
        "batch": batch,
        "evidence_is_link": rules.evidence_is_link(batch.evidence),
        "reasons": reasons,
        "page": page,
        "verdict": verdict,
        "reason": reason,
        "verdicts": VERDICTS,
    }
    return render_page(request, "runs/batch.html", context, partial="results")


@login_required
@require_GET
def node_detail(request, suite, nodeid):
    suite = suite_for(request, suite)
    if rules.nodeid_error(nodeid):
        # No stored node id holds control characters; PostgreSQL could not even compare a NUL.
        raise Http404("No such node.")
    node = get_object_or_404(Node, suite=suite, nodeid=nodeid)
    if wants_partial(request) and request.GET.get("panel") == "latest":
        context = {"suite": suite, "node": node,
                   "latest": selectors.latest_measurements(node)}
        return render_page(request, "runs/node.html", context, partial="latest")
    today = timezone.now().date()
    history = selectors.node_history(suite, node)
    entries = [entry_row(entry, today) for entry in history.entries]
    context = {
        "suite": suite,
        "nav": "node",
        "node": node,
        "history": history,
        "entries": entries,
        "open_row": next((row for row in entries if row.is_open), None),
        "measurements_desc": history.measurements[::-1],
        "budget": suite.max_upper_rate,
        "can_edit": can(request.role, Role.OWNER),
    }
    return render(request, "runs/node.html", context)
