"""The ledger page: open entries with their states, filters, the share against the cap."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.utils import timezone
from django.views.decorators.http import require_GET

from .access import can, suite_for, user_handle
from .forms import LedgerFilterForm, owners_of
from .models import QuarantineEntry, Role
from .selectors import entry_counts, share_figures
from .views_common import PER_PAGE, entry_row, render_page, share_context


@login_required
@require_GET
def ledger(request, suite):
    suite = suite_for(request, suite)
    today = timezone.now().date()
    form = LedgerFilterForm(request.GET, owners=owners_of(suite))
    entries = form.entries(
        QuarantineEntry.objects.filter(suite=suite).select_related("node"),
        today=today,
        handle=user_handle(request.user),
    )
    page = Paginator(entries, PER_PAGE).get_page(request.GET.get("page"))
    counts = entry_counts(suite, today)
    share = share_figures(suite, today)
    return render_page(
        request,
        "ledger/ledger.html",
        {
            "suite": suite,
            "nav": "ledger",
            "today": today,
            "form": form,
            "page": page,
            "rows": [entry_row(entry, today) for entry in page],
            "counts": counts,
            "open_count": sum(counts.values()),
            "share": share,
            **share_context(share.share, share.cap),
            "handle": user_handle(request.user),
            "can_edit": can(request.role, Role.OWNER),
        },
        partial="results",
    )
