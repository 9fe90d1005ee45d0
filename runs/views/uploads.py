"""The uploads' pages: the lists of reports and of verdict batches, and each one's rows."""

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from flakeboard import rules
from flakeboard.rules.trends import Gate, tone_of
from ledger.access import can, suite_for
from ledger.models import Role
from ledger.rows import EntryRow, entry_row
from ledger.selectors import share_figures
from web.pages import PAGE_SIZES, filter_links, list_page, page_size, query_choice, share_context

from .. import selectors
from ..attempts import earlier_attempts, flipped_nodes
from ..diagnosed import measurements_diagnosed
from ..models import Report, VerdictBatch

ROWS_PER_PAGE = 100
STATUSES = [s.value for s in rules.GateStatus]
VERDICTS = [v.value for v in rules.Verdict]
REASONS = [r.value for r in rules.Reason]
# The summaries at the top of an upload's page: the worst first.
STATUS_ORDER = [rules.GateStatus.FAIL.value, rules.GateStatus.WARN.value, rules.GateStatus.OK.value]
VERDICT_ORDER = [rules.Verdict.REJECT.value, rules.Verdict.HOLD.value, rules.Verdict.ACCEPT.value]


def _by_count(counts: dict[str, int]) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


# An upload page's rows, and the field its summary and filters group them by, worst first.
UPLOAD_ROWS = {
    Report: ("measurements", "status", STATUS_ORDER),
    VerdictBatch: ("verdicts", "verdict", VERDICT_ORDER),
}


def _upload(request, slug: str, model, pk: int):
    """An upload page's suite, its upload of ``model`` (404 for none of the suite), and the
    context of its summary and filters: a link per value of the rows' group (status or
    verdict) with its count, the reason codes present with theirs, the chosen values and
    page size."""
    suite = suite_for(request, slug)
    upload = get_object_or_404(model, suite=suite, pk=pk)
    rows, group, order = UPLOAD_ROWS[model]
    counts = selectors.counts_by(getattr(upload, rows), group)
    return suite, upload, {
        "summary": filter_links(request, group, counts[group], order),
        "reason_choices": _by_count(counts["reason"]),
        group: query_choice(request, group, order),
        "reason": query_choice(request, "reason", REASONS),
        "page_sizes": PAGE_SIZES,
        "per_page": str(page_size(request, ROWS_PER_PAGE)),
    }


@login_required
@require_GET
def reports(request, suite):
    suite = suite_for(request, suite)
    context = {"suite": suite, "nav": "reports", "statuses": STATUSES}
    return list_page(request, "runs/reports.html", Report.objects.filter(suite=suite), context,
                     choice=("status", STATUSES))


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
    suite, report, filters = _upload(request, suite, Report, pk)
    today = timezone.now().date()
    can_edit = can(request.role, Role.OWNER)

    def rows(page):
        shown = selectors.report_rows(suite, page)
        diagnosed = measurements_diagnosed(suite, [row.measurement for row in shown], today)
        return [
            (row, _entry_at_upload(row.measurement, report.day),
             entry_row(row.entry, today) if row.entry else None,
             _quarantine_url(request, suite, report, row.measurement) if can_edit else "",
             diagnosed.get(row.measurement.pk))
            for row in shown
        ]

    context = {
        "suite": suite,
        "nav": "reports",
        "report": report,
        "ok_count": report.measurement_count - report.fail_count - report.warn_count,
        "earlier": earlier_attempts(report),
        "over_cap": report.over_cap,
        "cap_room": can_edit and share_figures(suite, today).headroom > 0,
        **share_context(report.share, report.max_share),
        "statuses": STATUSES,
        "can_edit": can_edit,
        **filters,
    }
    rows_shown = selectors.report_measurements(report, filters["status"], filters["reason"])
    return list_page(request, "runs/report.html", rows_shown, context,
                     per_page=int(filters["per_page"]), rows=rows)


@login_required
@require_GET
def batches(request, suite):
    suite = suite_for(request, suite)
    context = {"suite": suite, "nav": "verdicts", "verdicts": VERDICTS}
    return list_page(request, "runs/verdicts.html", VerdictBatch.objects.filter(suite=suite),
                     context, choice=("verdict", VERDICTS))


@login_required
@require_GET
def batch_detail(request, suite, pk):
    suite, batch, filters = _upload(request, suite, VerdictBatch, pk)
    context = {
        "suite": suite,
        "nav": "verdicts",
        "batch": batch,
        "earlier": earlier_attempts(batch),
        "flipped": flipped_nodes(batch),
        # Rows of nodes this upload left out, judged on the earlier attempts.
        "carried": batch.verdicts.filter(sent=False).count() if batch.attempt > 1 else 0,
        # Each reason with the tone of the outcome it comes with, for its bar's colour.
        "reasons": [(reason, count, tone_of(Gate.ARBITER, reason))
                    for reason, count in _by_count(batch.reason_counts)],
        "verdicts": VERDICTS,
        **filters,
    }
    rows = selectors.batch_verdicts(batch, verdict=filters["verdict"], reason=filters["reason"])
    return list_page(request, "runs/batch.html", rows, context,
                     per_page=int(filters["per_page"]))
