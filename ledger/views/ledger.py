"""The ledger page: open entries with their states, filters, the share against the cap."""

from __future__ import annotations

from datetime import date
from typing import NamedTuple

from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.utils import timezone
from django.views.decorators.http import require_GET

from flakeboard import rules
from web.access import can, suite_for, user_handle
from web.csv import CSV_CHUNK, csv_response
from web.pages import entry_row, list_page, share_context

from ..codeowners import suite_codeowners
from ..forms.entries import LedgerFilterForm, owners_of
from ..models import QuarantineEntry, Role, Suite
from ..selectors import entry_counts, share_figures

LEDGER_CSV_HEADER = ("node", "state", "owner", "expires", "age_days", "renewals", "evidence",
                     "created_at", "created_by", "note")


class Shown(NamedTuple):
    suite: Suite
    today: date
    form: LedgerFilterForm
    entries: QuerySet  # every page's
    codeowners: rules.Codeowners


def _shown(request, slug: str) -> Shown:
    """The member's suite, the filter form of the query and the entries it shows: the
    page's rows and the CSV's are one query."""
    suite = suite_for(request, slug)
    today = timezone.now().date()
    codeowners = suite_codeowners(suite)
    form = LedgerFilterForm(request.GET, owners=owners_of(suite), codeowners=codeowners)
    entries = form.entries(
        QuarantineEntry.objects.filter(suite=suite).select_related("node"),
        today=today,
        handle=user_handle(request.user),
    )
    return Shown(suite, today, form, entries, codeowners)


def _without_page(request) -> str:
    """The query of the page's filters, for the CSV of every page."""
    query = request.GET.copy()
    query.pop("page", None)
    return query.urlencode()


@login_required
@require_GET
def ledger(request, suite):
    suite, today, form, entries, codeowners = _shown(request, suite)
    counts = entry_counts(suite, today)
    share = share_figures(suite, today)
    return list_page(
        request,
        "ledger/ledger.html",
        entries,
        {
            "suite": suite,
            "nav": "ledger",
            "today": today,
            "form": form,
            "counts": counts,
            "open_count": sum(counts.values()),
            "share": share,
            **share_context(share.share, share.cap),
            "handle": user_handle(request.user),
            "can_edit": can(request.role, Role.OWNER),
            "csv_query": _without_page(request),
        },
        rows=lambda page: [entry_row(entry, today, codeowners) for entry in page],
    )


@login_required
@require_GET
def ledger_csv(request, suite):
    """The ledger as CSV, filtered as the page with the same query shows it, every page."""
    suite, today, _form, entries, _codeowners = _shown(request, suite)
    rows = (
        (e.node.nodeid, e.state(today).value, e.owner, e.expires.isoformat(), e.age_days(today),
         e.renewals, e.evidence, e.created_at.isoformat(), e.created_by, e.note)
        for e in entries.iterator(chunk_size=CSV_CHUNK)
    )
    return csv_response(f"{suite.slug}-ledger-{today}.csv", LEDGER_CSV_HEADER, rows)
