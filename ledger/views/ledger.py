"""The ledger page: open entries with their states, filters, the share against the cap."""

from __future__ import annotations

from datetime import date
from typing import NamedTuple
from urllib.parse import urlsplit

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import QueryDict
from django.utils import timezone
from django.views.decorators.http import require_GET

from flakeboard import rules
from web.access import can, suite_for, user_handle
from web.csv import CSV_CHUNK, csv_response
from web.pages import PER_PAGE, entry_row, list_page, share_context

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
    return _filtered(request, suite_for(request, slug), timezone.now().date(), request.GET)


def _filtered(request, suite: Suite, today: date, query: QueryDict) -> Shown:
    codeowners = suite_codeowners(suite)
    form = LedgerFilterForm(query, owners=owners_of(suite), codeowners=codeowners)
    entries = form.entries(
        QuarantineEntry.objects.filter(suite=suite).select_related("node"),
        today=today,
        handle=user_handle(request.user),
    )
    return Shown(suite, today, form, entries, codeowners)


def _without_page(query: QueryDict) -> str:
    """The query of the page's filters, for the CSV of every page."""
    query = query.copy()
    query.pop("page", None)
    return query.urlencode()


def glance(suite: Suite, today: date) -> dict:
    """The tiles' figures: the open entries by state, and the share against the cap."""
    counts = entry_counts(suite, today)
    share = share_figures(suite, today)
    return {
        "counts": counts,
        "open_count": sum(counts.values()),
        "share": share,
        **share_context(share.share, share.cap),
    }


def shown_count(request, suite: Suite, today: date) -> dict:
    """The count line's figures for the ledger as the member has it filtered: the query of
    the page an htmx request was sent from (its ``HX-Current-URL``)."""
    query = QueryDict(urlsplit(request.htmx.current_url or "").query)
    entries = _filtered(request, suite, today, query).entries
    return {
        "page": Paginator(entries, PER_PAGE).get_page(query.get("page")),
        "csv_query": _without_page(query),
    }


@login_required
@require_GET
def ledger(request, suite):
    suite, today, form, entries, codeowners = _shown(request, suite)
    return list_page(
        request,
        "ledger/ledger.html",
        entries,
        {
            "suite": suite,
            "nav": "ledger",
            "today": today,
            "form": form,
            **glance(suite, today),
            "handle": user_handle(request.user),
            "can_edit": can(request.role, Role.OWNER),
            "csv_query": _without_page(request.GET),
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
