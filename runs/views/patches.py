"""A patch's page: its commits, newest first, each with its attempts and its flips."""

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.views.decorators.http import require_GET

from ledger.access import suite_for
from web.pages import list_page

from ..patches import COMMITS_PER_PAGE, commit_rows, patch_commits, patch_figures


@login_required
@require_GET
def patch_detail(request, suite, patch):
    """``patches/<patch>/``: the patch is any text (see runs.urls.PatchConverter)."""
    suite = suite_for(request, suite)
    figures = patch_figures(suite, patch)
    if not figures["uploads"]:
        # As for a node: a patch no batch of this suite names has no page.
        raise Http404("No verdict batch names this patch.")
    context = {"suite": suite, "nav": "verdicts", "patch": patch, "figures": figures}
    return list_page(request, "runs/patch.html", patch_commits(suite, patch), context,
                     per_page=COMMITS_PER_PAGE,
                     rows=lambda page: commit_rows(suite, patch, page))
