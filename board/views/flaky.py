"""The flaky-tests page: the tests that flipped between gate attempts, the new tests flaky
at birth, then those ranked by flaky failures seen in JUnit files (``board.flaky``),
filtered by kind if asked, each with its two next steps,
Quarantine (the form prefilled from its evidence) and Measure (the node joins the suite's
measurement targets).

It shows both apps' evidence, so it lives with the other pages that compose them (the
overview, the node page): junit never reads the gate's uploads."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from board.categories import category_counts, diagnosed
from board.flaky import FlakyRanking, flaky_page_rows
from board.forms import FlakyPageForm
from flakeboard import rules as gate_rules
from junit.forms import FlakyFilterForm
from junit.selectors import junit_branches
from ledger.access import actor_label, can, suite_for
from ledger.measure_targets import measure_target_set
from ledger.models import Node, Role
from web.pages import list_page, render_page

TEMPLATE = "board/flaky.html"


def quarantine_query(request, suite, row, window) -> str:
    """The entry form's prefill: the node and the counts its row shows (``row.evidence``),
    with the page that holds them as evidence: its flip's batch, its birth's report, or
    this page on the node for its JUnit runs."""
    own = row.evidence.figures
    n, fails = own.runs, own.flaky_failures
    if source := row.flip or row.birth:
        evidence = request.build_absolute_uri(source.url)
    else:
        page = reverse("flaky", args=[suite.slug]) + "?" + urlencode(
            {"q": row.node.nodeid, "days": window.days})
        evidence = request.build_absolute_uri(page)
        if len(evidence) > gate_rules.EVIDENCE_MAX_LENGTH:
            evidence = request.build_absolute_uri(reverse("flaky", args=[suite.slug]))
    return urlencode({"node": row.node.nodeid, "n": n, "fails": fails, "evidence": evidence})


def _context(request, suite, window) -> dict:
    # The rows' Measure forms post here: reversed once for the page, not twice a row.
    return {"suite": suite, "nav": "flaky", "window": window,
            "can_edit": can(request.role, Role.OWNER),
            "measure_url": reverse("flaky_measure", args=[suite.slug])}


def _rows(request, suite, window, ranked, shown: dict | None = None, *,
          headings: bool = True) -> list:
    """The page's rows, each with its diagnosis: from ``shown`` (by node key), else
    diagnosed here."""
    rows = flaky_page_rows(suite, window, list(ranked), headings=headings)
    if shown is None:
        shown = diagnosed(suite, [row.node for row in rows], today=window.today)
    for row in rows:
        row.quarantine_query = quarantine_query(request, suite, row, window)
        row.diagnosis = shown.get(row.node.pk)
    return rows


@login_required
@require_GET
def flaky(request, suite):
    suite = suite_for(request, suite)
    today = timezone.now().date()
    form = FlakyPageForm(request.GET, branches=junit_branches(suite))
    window = form.window(today)
    ranking = FlakyRanking(suite, window, evidence=form.evidence_kind)
    shown = None
    if chosen := form.category_chosen:
        # Only a category chosen diagnoses every listed test, and then says how many of
        # them each category holds; the page alone diagnoses its own rows.
        categories = category_counts(suite, ranking, today=today)
        form.count_categories(categories.counts)
        ranking = FlakyRanking(suite, window, nodes=categories.nodes(chosen),
                               evidence=form.evidence_kind)
        shown = categories.shown
    return list_page(
        request, TEMPLATE, ranking,
        {**_context(request, suite, window), "form": form, "ranking": ranking},
        rows=lambda page: _rows(request, suite, window, page, shown),
    )


@login_required
@require_POST
def measure(request, suite):
    """Mark a node to measure, or unmark it (``marked`` empty); for htmx, its row again."""
    suite = suite_for(request, suite, Role.OWNER)
    nodeid = request.POST.get("node", "")
    marked = bool(request.POST.get("marked"))
    try:
        measure_target_set(suite=suite, nodeid=nodeid, actor=actor_label(request.user),
                           marked=marked)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        notice = (f"{nodeid} is marked to measure: the targets file lists it first."
                  if marked else f"{nodeid} is no longer marked to measure.")
        if request.htmx:
            form = FlakyFilterForm(request.POST, branches=[request.POST.get("branch", "")])
            window = form.window(timezone.now().date())
            ranked = FlakyRanking(suite, window,
                                  nodes=Node.objects.filter(suite=suite).named(nodeid))
            rows = _rows(request, suite, window, ranked[:1], headings=False)
            if rows:
                context = {**_context(request, suite, window), "row": rows[0],
                           "notice": notice}
                return render_page(request, TEMPLATE, context, partial="row")
        messages.success(request, notice)
    back = request.POST.get("next", "")
    if url_has_allowed_host_and_scheme(back, {request.get_host()}, request.is_secure()):
        return redirect(back)
    return redirect("flaky", suite.slug)
