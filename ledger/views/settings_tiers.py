"""The settings page's Tier rules section: a rule's live preview, and a rule that would turn
quarantined nodes into tier violations shown with those entries first, added only once the
lead confirms."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import render

from flakeboard import rules
from ledger.access import actor_label, for_leads
from web.pages import wants_partial

from ..forms.settings import TierRuleForm
from ..models import TierRule
from ..tiers import tier_rule_add as add_rule
from ..tiers import tier_rule_preview as preview_rule
from ..tiers import tier_rule_remove as remove_rule
from .settings import _back, _page, _removal

PREVIEW_LIMIT = 50


def _preview(suite, glob: str, tier: int):
    """What the rule would match (at most PREVIEW_LIMIT node ids) and newly violate."""
    found = preview_rule(suite, glob, tier, limit=PREVIEW_LIMIT + 1)
    return {
        "glob": glob,
        "tier": tier,
        "matching": found.matching[:PREVIEW_LIMIT],
        "more": len(found.matching) > PREVIEW_LIMIT,
        "would_violate": found.would_violate,
    }


@for_leads("GET")
def tier_rule_preview(request, suite):
    form = TierRuleForm(request.GET)
    preview = None
    if form.is_valid():
        preview = _preview(suite, form.cleaned_data["glob"], form.cleaned_data["tier"])
    if wants_partial(request):
        return render(request, "ledger/settings.html#rule_preview",
                      {"suite": suite, "preview": preview})
    return _page(request, suite, rule_form=form, preview=preview)


@for_leads("POST")
def tier_rule_add(request, suite):
    form = TierRuleForm(request.POST)
    if not form.is_valid():
        return _page(request, suite, rule_form=form)
    glob, tier = form.cleaned_data["glob"], form.cleaned_data["tier"]
    preview = _preview(suite, glob, tier)
    warned = {entry.pk for entry in preview["would_violate"]}
    if warned and not warned <= form.confirmed_ids():
        confirm = ",".join(str(pk) for pk in sorted(warned))
        again = TierRuleForm(initial={"glob": glob, "tier": tier, "confirm": confirm})
        return _page(request, suite, rule_form=again, preview=preview, rule_warning=True)
    try:
        add_rule(suite=suite, glob=glob, tier=tier, actor=actor_label(request.user))
    except ValidationError as exc:
        form.add_error(None, exc)
        return _page(request, suite, rule_form=form)
    if warned:
        messages.warning(
            request,
            f"Rule “{glob}” added: "
            f"{rules.plural(len(warned), 'quarantine entry is', 'quarantine entries are')} "
            "now tier violations.",
        )
    else:
        messages.success(request, f"Rule “{glob}” added.")
    return _back(suite, "tier-rules")


@_removal(TierRule, section="tier-rules")
def tier_rule_remove(rule, actor):
    remove_rule(rule=rule, actor=actor)
    return f"Rule “{rule.glob}” removed."
