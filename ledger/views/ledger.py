"""The ledger page: open entries with their states, filters, the share against the cap."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.utils import timezone
from django.views.decorators.http import require_GET

from web.access import can, suite_for, user_handle
from web.pages import entry_row, list_page, share_context

from ..codeowners import suite_codeowners
from ..forms.entries import LedgerFilterForm, owners_of
from ..models import QuarantineEntry, Role
from ..selectors import entry_counts, share_figures


@login_required
@require_GET
def ledger(request, suite):
    suite = suite_for(request, suite)
    today = timezone.now().date()
    codeowners = suite_codeowners(suite)
    form = LedgerFilterForm(request.GET, owners=owners_of(suite), codeowners=codeowners)
    entries = form.entries(
        QuarantineEntry.objects.filter(suite=suite).select_related("node"),
        today=today,
        handle=user_handle(request.user),
    )
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
        },
        rows=lambda page: [entry_row(entry, today, codeowners) for entry in page],
    )
