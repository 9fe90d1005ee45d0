"""The owners view: who holds the suite's quarantine debt, each figure a link into the
filtered ledger."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from flakeboard import rules
from ledger.access import suite_for

from ..codeowners import suite_codeowners
from ..owners import OwnerDebt, open_tickets, owner_debts


def _links(ledger_url: str, debt: OwnerDebt) -> dict[str, str]:
    """The ledger filtered to the owner's (or team's) entries of each figure."""
    who = {"codeowner" if debt.team else "owner": debt.name}

    def link(**filters) -> str:
        return ledger_url + "?" + urlencode({**who, **filters})

    return {
        "open": link(),
        "expiring": link(state=rules.EntryState.EXPIRING.value),
        "expired": link(state=rules.EntryState.EXPIRED.value),
        "ready": link(ready="on"),
        "oldest": link(sort="expires"),
    }


@login_required
@require_GET
def owners(request, suite):
    suite = suite_for(request, suite)
    today = timezone.now().date()
    codeowners = suite_codeowners(suite)
    ledger_url = reverse("ledger", args=[suite.slug])
    rows = [
        {"debt": debt, "links": _links(ledger_url, debt),
         "age": debt.oldest_age_days(today)}
        for debt in owner_debts(suite, today, codeowners)
    ]
    return render(request, "ledger/owners.html", {
        "suite": suite, "nav": "owners", "rows": rows, "has_codeowners": bool(codeowners.rules),
        "tickets": open_tickets(suite),
    })
