"""What the suite pages share: htmx-aware rendering, the list pages' one shape (a choice
from the query, a page of rows, the whole page or its partial)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Page, Paginator
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import patch_vary_headers

PER_PAGE = 25
# From this share of the cap the share's meter and tile turn amber.
NEAR_CAP = 0.7


def wants_partial(request) -> bool:
    """An htmx request that swaps part of a page (a history restore needs the whole page)."""
    return bool(request.htmx) and not request.htmx.history_restore_request


def render_page(request, template: str, context: dict, *, partial: str | None = None):
    """The whole page, or for an htmx request the named partial of the same template."""
    name = f"{template}#{partial}" if partial and wants_partial(request) else template
    response = render(request, name, context)
    patch_vary_headers(response, ["HX-Request"])
    return response


@dataclass(frozen=True)
class SettingsSection:
    """A settings section an app loads into the settings page with htmx (the Webhook, the
    Issue tracker): ``template``'s partial "section", drawn from ``context(suite, form)``
    (``form`` None: the section's form as saved), and a page of its own without JavaScript.
    A lead's action answers with ``done``."""

    template: str
    anchor: str
    context: Callable

    def render(self, request, suite, *, form=None, **extra):
        context = {"suite": suite, "nav": "settings", **self.context(suite, form), **extra}
        return render_page(request, self.template, context, partial="section")

    def done(self, request, suite, text: str, *, ok: bool = True):
        """What the action did: the section swapped in with a notice (htmx), or a message on
        the settings page."""
        if wants_partial(request):
            return self.render(request, suite, notice=text, notice_ok=ok)
        (messages.success if ok else messages.error)(request, text)
        return redirect(reverse("settings", args=[suite.slug]) + f"#{self.anchor}")


def query_choice(request, name: str, allowed: Sequence[str]) -> str:
    """The query's ``name`` when it is one of ``allowed``; else "" (all): a filter value
    that is not on offer is ignored, never an error page."""
    value = request.GET.get(name, "")
    return value if value in allowed else ""


# The page sizes a long list offers (``?per_page=``); any other value is the page's default.
PAGE_SIZES = ("25", "100", "500")


def page_size(request, default: int) -> int:
    return int(query_choice(request, "per_page", PAGE_SIZES) or default)


@dataclass(frozen=True)
class FilterLink:
    """One figure of a list's summary: a value, how many rows have it, the list filtered by it."""

    value: str
    count: int
    href: str
    current: bool


def filter_links(request, name: str, counts: dict[str, int], order: Sequence[str]):
    """A link per value of ``name`` in ``order``, with its count: each filters the list by that
    value alone (the page size kept)."""
    kept = {"per_page": request.GET["per_page"]} if "per_page" in request.GET else {}
    current = query_choice(request, name, order)
    return [
        FilterLink(value, counts.get(value, 0), "?" + urlencode({name: value, **kept}),
                   value == current)
        for value in order
    ]


def list_page(
    request,
    template: str,
    items,
    context: dict,
    *,
    choice: tuple[str, Sequence[str]] | None = None,
    per_page: int = PER_PAGE,
    rows: Callable[[Page], list] | None = None,
    partial: str = "results",
):
    """A list page: ``items`` narrowed by an optional ``choice``, one page of them
    (``?page=``; past the end is the last page), rendered whole or, for htmx, as ``partial``.

    ``choice`` is a field and its allowed values: the query's value (see ``query_choice``)
    filters ``items`` on that field and is put in the context under the field's name.
    ``rows`` turns the page into what the template lists as ``rows``.
    """
    context = dict(context)
    if choice is not None:
        field, allowed = choice
        context[field] = value = query_choice(request, field, allowed)
        if value:
            items = items.filter(**{field: value})
    page = Paginator(items, per_page).get_page(request.GET.get("page"))
    context["page"] = page
    if rows is not None:
        context["rows"] = rows(page)
    return render_page(request, template, context, partial=partial)


@dataclass(frozen=True)
class Pager:
    """One page of a list that shares its page with others: its own page parameter, and
    links to the pages beside it that keep the rest of the query (the other lists' pages)."""

    page: Page
    param: str
    previous_url: str | None
    next_url: str | None


def pager(request, items, param: str, per_page: int = PER_PAGE) -> Pager:
    """A page of ``items`` chosen by ``?<param>=`` (past the end is the last page)."""
    page = Paginator(items, per_page).get_page(request.GET.get(param))

    def url(number: int) -> str:
        query = request.GET.copy()
        query[param] = str(number)
        return "?" + query.urlencode()

    return Pager(
        page,
        param,
        url(page.previous_page_number()) if page.has_previous() else None,
        url(page.next_page_number()) if page.has_next() else None,
    )


def percent(fraction: float) -> str:
    """0.083 → "8.3%", 0.05 → "5%"."""
    return f"{fraction * 100:.1f}".removesuffix(".0") + "%"


def share_context(share: float, cap: float) -> dict:
    """The quarantined share as the pages print it, and a meter whose full scale is the cap."""
    scale = cap if cap > 0 else 1.0
    return {
        "share_pct": percent(share),
        "cap_pct": percent(cap),
        "near_cap": share >= scale * NEAR_CAP,
        "meter": {
            "value": f"{min(share, scale):.6f}",
            "max": f"{scale:.6f}",
            "low": f"{scale * NEAR_CAP:.6f}",
            "high": f"{scale * 0.9:.6f}",
        },
    }
