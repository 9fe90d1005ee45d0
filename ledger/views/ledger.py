"""The ledger page: open entries with their states, filters, the share against the cap."""

from __future__ import annotations

from datetime import date
from typing import NamedTuple
from urllib.parse import urlsplit

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import QueryDict
from django.shortcuts import redirect
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from flakeboard import rules
from ledger.access import actor_label, can, suite_for, user_handle
from ledger.rows import entry_row
from web.csv import CSV_CHUNK, csv_response
from web.pages import PER_PAGE, list_page, share_context

from ..bulk_actions import BulkAction, BulkOutcome, bulk_apply
from ..codeowners import suite_codeowners
from ..forms.entries import BulkForm, LedgerFilterForm, owners_of
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
            "can_bulk": can(request.role, Role.OWNER),
            "bulk_form": bulk_form(suite, today),
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


def bulk_form(suite: Suite, today: date, data=None) -> BulkForm:
    _, latest = rules.expiry_bounds(today, suite.max_quarantine_days)
    return BulkForm(data, initial={"expires": latest}, today=today,
                    max_days=suite.max_quarantine_days)


def _say_outcomes(request, action: BulkAction, outcomes: list[BulkOutcome]) -> None:
    """The result as messages: how many were done, then each refused row and why."""
    past = "renewed" if action is BulkAction.RENEW else "cleared"
    refused = [outcome for outcome in outcomes if not outcome.done]
    done = len(outcomes) - len(refused)
    if not refused:
        messages.success(request, f"{past.capitalize()} {done} entr{pluralize(done, 'y,ies')}, "
                                  "each with its own history event.")
        return
    total = len(outcomes)
    say = messages.warning if done else messages.error
    say(request, f"{past.capitalize()} {done} of {total} selected entr"
                 f"{pluralize(total, 'y,ies')}; {len(refused)} refused, left unchanged:")
    for outcome in refused:
        reasons = " ".join(message for message, _code in outcome.refusals)
        if outcome.nodeid is None:
            messages.error(request, f"Not {past}: {reasons}")
        else:
            messages.error(request, f"{outcome.nodeid} was not {past}: {reasons}")


@login_required
@require_POST
def ledger_bulk(request, suite):
    """Renew or clear the selected rows with one reason; back to the ledger as it was
    filtered, with the result: the count done and each refusal, row by row."""
    suite = suite_for(request, suite, Role.OWNER)
    today = timezone.now().date()
    form = bulk_form(suite, today, request.POST)
    query = QueryDict(request.POST.get("query", "")).urlencode()
    back = redirect(reverse("ledger", args=[suite.slug]) + (f"?{query}" if query else ""))
    if not form.is_valid():
        messages.error(request, " ".join(e for errors in form.errors.values() for e in errors))
        return back
    action = BulkAction(form.cleaned_data["action"])
    try:
        outcomes = bulk_apply(suite=suite, entry_ids=form.entry_ids(), action=action,
                              actor=actor_label(request.user), today=today,
                              **form.service_arguments())
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return back
    _say_outcomes(request, action, outcomes)
    return back
