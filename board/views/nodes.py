"""A node's page: its measurements and verdicts over time, and its quarantine entries."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponsePermanentRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET

from board.categories import node_panel
from flakeboard import rules
from junit.selectors import passive_history
from ledger.access import can, suite_for
from ledger.codeowners import suite_codeowners
from ledger.models import Node, Role
from ledger.rows import entry_row
from runs import selectors
from web.pages import pager, render_page, wants_partial


@login_required
@require_GET
def node_by_id(request, suite, nodeid):
    """``nodes/<node id>/``, the address before node pages had keys: a permanent redirect
    to the node's page, query included."""
    suite = suite_for(request, suite)
    if rules.nodeid_problem(nodeid):
        # No stored node id holds control characters; PostgreSQL could not even compare a NUL.
        raise Http404("No such node.")
    node = get_object_or_404(Node.objects.filter(suite=suite).named(nodeid))
    url = reverse("node", args=[suite.slug, node.key])
    if request.GET:
        url += "?" + request.GET.urlencode()
    return HttpResponsePermanentRedirect(url)


MEASUREMENTS_PER_PAGE = 10
VERDICTS_PER_PAGE = 25
# The lists that page on their own: with htmx, a page link swaps only its list.
LISTS = ("measurements-list", "verdicts-list")


def _lists(request, suite, node, read=None) -> dict:
    """A page of the node's measurements (``?mpage=``) and one of its verdicts
    (``?vpage=``), each newest first. ``read``: the node's history, whose measurements
    (with their budgets) are paged when they are all of them, rather than read again."""
    if read is not None and len(read.measurements) < selectors.NODE_MEASUREMENTS:
        measurements = pager(request, read.measurements[::-1], "mpage", MEASUREMENTS_PER_PAGE)
    else:
        measurements = pager(request, selectors.node_measurements(node), "mpage",
                             MEASUREMENTS_PER_PAGE)
        measurements.page.object_list = selectors.with_budgets(suite, measurements.page)
    verdicts = pager(request, selectors.node_verdicts(node), "vpage", VERDICTS_PER_PAGE)
    return {"measurements": measurements, "verdicts": verdicts}


@login_required
@require_GET
def node_detail(request, suite, key):
    """A node's page, addressed by its key: a node id may hold ``/../``, ``?`` or ``#``,
    which a browser would rewrite or cut in a path."""
    suite = suite_for(request, suite)
    node = Node.objects.filter(suite=suite, key=key).first()
    if node is None:
        # A node id that happens to look like a key.
        return node_by_id(request, suite.slug, key)
    if wants_partial(request) and request.GET.get("panel") == "latest":
        context = {"suite": suite, "node": node,
                   "latest": selectors.latest_measurements(node)}
        return render_page(request, "board/node.html", context, partial="latest")
    if wants_partial(request) and request.htmx.target in LISTS:
        context = {"suite": suite, "node": node, "swapped": True,
                   **_lists(request, suite, node)}
        response = render_page(request, "board/node.html", context, partial=request.htmx.target)
        patch_vary_headers(response, ["HX-Target"])
        return response
    today = timezone.now().date()
    history = selectors.node_history(suite, node, today)
    codeowners = suite_codeowners(suite)
    entries = [entry_row(entry, today, codeowners) for entry in history.entries]
    open_row = next((row for row in entries if row.is_open), None)
    passive = passive_history(node, today, suite=suite)
    context = {
        "suite": suite,
        "nav": "node",
        "node": node,
        "history": history,
        "entries": entries,
        "open_row": open_row,
        "rate_change": open_row and open_row.entry.rate_change(),
        **_lists(request, suite, node, history),
        "passive": passive,
        "diagnosis": node_panel(
            suite, node, today=today,
            latest=history.measurements[-1] if history.measurements else None,
            junit_flaky=passive is not None and passive.figures.flaky_failures > 0),
        "budget": suite.max_upper_rate,
        "code_owners": codeowners.owners_of_node(node.nodeid),
        "can_edit": can(request.role, Role.OWNER),
    }
    response = render(request, "board/node.html", context)
    patch_vary_headers(response, ["HX-Request", "HX-Target"])
    return response
