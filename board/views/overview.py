"""A suite's overview: the ledger's counts and share, the reason-code chart, recent uploads."""

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from board.flaky import FLAKY_TILE_DAYS, flaky_count
from junit.selectors import Window
from ledger import selectors as ledger_selectors
from ledger.access import suite_for
from ledger.status import status_causes
from runs import selectors
from runs.trends import OVERVIEW_DAYS, overview_chart
from web.pages import share_context


@login_required
@require_GET
def overview(request, suite):
    suite = suite_for(request, suite)
    today = timezone.now().date()
    counts = ledger_selectors.entry_counts(suite, today)
    now = ledger_selectors.gate_status_now(suite, today, counts)
    share = now.share
    return render(
        request,
        "board/overview.html",
        {
            "suite": suite,
            "nav": "overview",
            "today": today,
            "counts": counts,
            "flaky_count": flaky_count(suite, Window(today, FLAKY_TILE_DAYS)),
            "flaky_days": FLAKY_TILE_DAYS,
            "status": now,
            "status_causes": status_causes(suite, now),
            "share": share,
            **share_context(share.share, share.cap),
            "reason_chart": overview_chart(suite, today),
            "reason_chart_query": urlencode({"range": OVERVIEW_DAYS, "bucket": "day"}),
            **selectors.recent_uploads(suite),
        },
    )
