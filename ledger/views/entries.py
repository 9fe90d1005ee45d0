"""One entry: its page, and creating, renewing and clearing it.

Renew and clear work in place with htmx from two places, told apart by ``place``: a row
of the ledger (``row``: the row re-renders) and the entry page (``entry``: its body
re-renders). Without htmx they are ordinary pages that redirect to the entry when done.
"""

from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from flakeboard import rules
from ledger.access import actor_label, can, suite_for, user_handle
from ledger.rows import entry_row
from web.pages import percent, render_page, share_context, wants_partial

from ..clearance import clearing_note
from ..codeowners import OwnerOffer, node_owners, owner_offer, suite_codeowners
from ..forms.entries import ClearForm, QuarantineForm, RenewForm
from ..models import QuarantineEntry, Role
from ..quarantine import quarantine_clear, quarantine_create, quarantine_renew
from ..selectors import share_figures, tier_resolution
from .ledger import glance, shown_count

PREFILL = ("node", "n", "fails", "upper95", "seed_base", "evidence")
LEDGER, ENTRY, NEW_ENTRY = "ledger/ledger.html", "ledger/entry.html", "ledger/entry_new.html"


def _place(request) -> str | None:
    """Where an htmx action was started: a ledger ``row`` or the ``entry`` page."""
    place = request.POST.get("place") or request.GET.get("place")
    return place if place in ("row", "entry") and wants_partial(request) else None


def _entry(suite, pk) -> QuarantineEntry:
    return get_object_or_404(QuarantineEntry.objects.select_related("node"), suite=suite, pk=pk)


def _renew_form(suite, entry, today, data=None) -> RenewForm:
    _, latest = rules.expiry_bounds(today, suite.max_quarantine_days)
    return RenewForm(
        data,
        initial={"expires": latest, "owner": entry.owner},
        today=today,
        max_days=suite.max_quarantine_days,
        auto_id=f"id_renew{entry.pk}_%s",
    )


def _clear_form(suite, entry, today, data=None) -> ClearForm:
    # Called as every action's form is (see _entry_action): a clearance needs no bounds.
    return ClearForm(data, auto_id=f"id_clear{entry.pk}_%s")


def _row_context(request, suite, entry, today, **extra) -> dict:
    row = entry_row(entry, today, suite_codeowners(suite))
    can_edit = can(request.role, Role.OWNER) and row.is_open
    return {
        "suite": suite,
        "nav": "ledger",
        "today": today,
        "entry": entry,
        "row": row,
        "can_edit": can_edit,
        "can_bulk": can(request.role, Role.OWNER),
        "can_renew": can_edit and row.state is not rules.EntryState.TIER_VIOLATION,
        **extra,
    }


def _chance(chance: float) -> str:
    return "under 0.1%" if 0 < chance < 0.001 else percent(chance)


def _outlook(suite, entry) -> dict:
    """What it takes to clear the entry, and how its figures read."""
    outlook = entry.outlook(suite.policy)
    return {
        "outlook": outlook,
        "budget_pct": percent(suite.max_upper_rate),
        "rate_pct": None if outlook.rate is None else percent(outlook.rate),
        "chance_pct": None if outlook.chance is None else _chance(outlook.chance),
        "clear_after": suite.clear_after_clean_measurements,
        "clean_so_far": rules.clean_streak(entry.trail_clean),
        "ci_failure": rules.last_ci_failure(entry.trail),
    }


def _page_context(request, suite, entry, today, **extra) -> dict:
    context = _row_context(request, suite, entry, today)
    context["events"] = list(entry.events.order_by("at", "pk"))
    context["code_owners"] = node_owners(suite, entry.node.nodeid)
    if context["row"].state is rules.EntryState.TIER_VIOLATION:
        context["resolution"] = tier_resolution(suite, entry.node.nodeid)
    context["renew_form"] = _renew_form(suite, entry, today)
    context["clear_form"] = _clear_form(suite, entry, today)
    if context["row"].is_open:
        context.update(_outlook(suite, entry))
        context["rate_change"] = entry.rate_change()
    context.update(extra)
    return context


@login_required
@require_GET
def entry_page(request, suite, pk):
    suite = suite_for(request, suite)
    entry = _entry(suite, pk)
    today = timezone.now().date()
    if _place(request) == "row":
        context = _row_context(request, suite, entry, today)
        return render_page(request, LEDGER, context, partial="row")
    return render(request, ENTRY, _page_context(request, suite, entry, today))


def _owner_offer(request, suite) -> OwnerOffer | None:
    """The owner the create form offers: a link's (``?owner=``), else CODEOWNERS' for the
    node id, else the signed-in user. None when the form asks again (htmx, its node id
    changed) after someone typed over what it offered: their owner stays."""
    owner, offered = request.GET.get("owner", ""), request.GET.get("offered")
    if owner and offered is None:
        return OwnerOffer(owner)
    if owner and owner != offered:
        return None
    return owner_offer(suite, request.GET.get("node", ""), user_handle(request.user))


def _owner_field(request, suite, bounds):
    """The owner field again, offered for the node id now typed; nothing to swap (204)
    when the owner is someone's own choice."""
    offer = _owner_offer(request, suite)
    if offer is None:
        response = HttpResponse(status=204)
        patch_vary_headers(response, ["HX-Request"])
        return response
    form = QuarantineForm(offer=offer, **bounds)
    return render_page(request, NEW_ENTRY, {"form": form}, partial="owner")


@login_required
@require_http_methods(["GET", "POST"])
def entry_new(request, suite):
    suite = suite_for(request, suite, Role.OWNER)
    today = timezone.now().date()
    bounds = {"today": today, "max_days": suite.max_quarantine_days}
    if request.method == "POST":
        form = QuarantineForm(request.POST, **bounds)
        if form.is_valid():
            try:
                entry = quarantine_create(
                    suite=suite, actor=actor_label(request.user), today=today,
                    **form.service_arguments(),
                )
            except ValidationError as exc:
                form.add_refusal(exc)
            else:
                messages.success(request, f"Quarantined until {entry.expires.isoformat()}.")
                return redirect("entry", suite.slug, entry.pk)
    elif wants_partial(request):
        return _owner_field(request, suite, bounds)
    else:
        _, latest = rules.expiry_bounds(today, suite.max_quarantine_days)
        initial = {"expires": latest}
        initial.update((key, request.GET[key]) for key in PREFILL if request.GET.get(key))
        form = QuarantineForm(initial=initial, offer=_owner_offer(request, suite), **bounds)
    share = share_figures(suite, today)
    return render_page(
        request,
        NEW_ENTRY,
        {
            "suite": suite,
            "nav": "ledger",
            "form": form,
            "share": share,
            **share_context(share.share, share.cap),
            "prefilled": request.method == "GET" and "node" in request.GET,
        },
    )


def _finished(request, suite, entry, today, place, notice):
    """The entry after a renewal or a clearance, where the request came from."""
    if place == "row":
        context = _row_context(request, suite, entry, today, notice=notice)
        context.update(glance(suite, today), **shown_count(request, suite, today))
        return render_page(request, LEDGER, context, partial="row-done")
    if place == "entry":
        context = _page_context(request, suite, entry, today, notice=notice)
        return render_page(request, ENTRY, context, partial="body")
    messages.success(request, notice)
    return redirect("entry", suite.slug, entry.pk)


def _unfinished(request, suite, entry, today, place, action, form):
    """The action's form (again, with what the service refused), where it was asked for."""
    if place == "row":
        context = _row_context(request, suite, entry, today, form=form)
        return render_page(request, LEDGER, context, partial=f"row-{action}")
    if place == "entry":
        context = _page_context(
            request, suite, entry, today, open_form=action, **{f"{action}_form": form}
        )
        return render_page(request, ENTRY, context, partial="body")
    context = _row_context(request, suite, entry, today, action=action, form=form)
    return render(request, "ledger/entry_action.html", context)


def _entry_action(action: str, make_form):
    """Renewing and clearing take the same steps, for an owner; the view they decorate
    only calls the service. GET shows the form. POST with a valid form runs the view, which
    answers the changed entry and a notice; a refusal shows the form again, with the
    service's reasons. Either way the answer goes where the action was asked for (``place``).
    ``make_form(suite, entry, today, data=None)`` builds the action's form."""

    def decorate(view):
        @login_required
        @require_http_methods(["GET", "POST"])
        @wraps(view)
        def flow(request, suite, pk):
            suite = suite_for(request, suite, Role.OWNER)
            entry = _entry(suite, pk)
            today = timezone.now().date()
            place = _place(request)
            if request.method == "GET":
                form = make_form(suite, entry, today)
                return _unfinished(request, suite, entry, today, place, action, form)
            form = make_form(suite, entry, today, request.POST)
            if form.is_valid():
                try:
                    entry, notice = view(request, entry, form, today)
                except ValidationError as exc:
                    form.add_refusal(exc)
                else:
                    return _finished(request, suite, entry, today, place, notice)
            return _unfinished(request, suite, entry, today, place, action, form)

        return flow

    return decorate


@_entry_action("renew", _renew_form)
def entry_renew(request, entry, form, today):
    entry = quarantine_renew(
        entry=entry, actor=actor_label(request.user), today=today, **form.service_arguments()
    )
    return entry, f"Renewed until {entry.expires.isoformat()}."


@_entry_action("clear", _clear_form)
def entry_clear(request, entry, form, today):
    entry = quarantine_clear(
        entry=entry, note=form.cleaned_data["note"], actor=actor_label(request.user)
    )
    return entry, "Cleared: the entry has left the ledger and stays in its history."


@login_required
@require_POST
def entry_clear_ready(request, suite, pk):
    """One click: clear a ready entry, with the measurements that made it ready (each
    linked to its report) as the note's evidence. The clear service refuses an entry that
    is not ready any more."""
    suite = suite_for(request, suite, Role.OWNER)
    entry = _entry(suite, pk)
    place = _place(request)

    def report_url(report: int) -> str:
        return request.build_absolute_uri(reverse("report", args=[suite.slug, report]))

    note = clearing_note(entry, suite.clear_after_clean_measurements, report_url)
    try:
        entry = quarantine_clear(entry=entry, note=note, actor=actor_label(request.user),
                                 if_ready=True)
    except ValidationError as exc:
        if place is None:
            messages.error(request, " ".join(exc.messages))
            return redirect("entry", suite.slug, entry.pk)
        notice = " ".join(exc.messages)
    else:
        notice = "Cleared as fixed: its clean measurements are the note's evidence."
    return _finished(request, suite, entry, timezone.now().date(), place, notice)
