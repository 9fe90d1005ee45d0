"""The leads' settings page: policy, tier rules, fixture pin, members and API tokens.

One page shows every section; each form posts to its own view, which calls the service
and comes back to the page. A tier rule that would turn quarantined nodes into tier
violations is shown with those entries first, and only added once the lead confirms.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Count
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from flakeboard import rules
from web.access import actor_label, suite_for
from web.pages import wants_partial

from ..forms.settings import FixturePinForm, MemberForm, PolicyForm, TierRuleForm, TokenForm
from ..models import ApiToken, AuditEvent, Membership, Node, Role, TierRule
from ..settings_services import fixture_pin_set, member_change, member_drop, policy_update
from ..tiers import tier_rule_add as add_rule
from ..tiers import tier_rule_preview as preview_rule
from ..tiers import tier_rule_remove as remove_rule
from ..tokens import token_create as create_token
from ..tokens import token_revoke as revoke_token

SETTINGS_ACTIONS = [
    AuditEvent.Action.SETTINGS,
    AuditEvent.Action.TIER_RULE,
    AuditEvent.Action.MEMBER,
    AuditEvent.Action.TOKEN,
]
PREVIEW_LIMIT = 50
HISTORY_LIMIT = 20


def _lead_suite(request, slug):
    return suite_for(request, slug, Role.LEAD)


def _back(suite, section: str):
    return redirect(reverse("settings", args=[suite.slug]) + f"#{section}")


def _runs_needed(suite, rate_text=None, min_runs_text=None) -> dict:
    """The runs-needed helper for a max_upper_rate (the suite's, or one being typed)."""
    fields = PolicyForm.base_fields
    rate, min_runs = suite.max_upper_rate, suite.min_runs
    try:
        if rate_text is not None:
            rate = fields["max_upper_rate"].clean(rate_text)
        if min_runs_text is not None:
            min_runs = fields["min_runs"].clean(min_runs_text)
    except ValidationError:
        return {"rate": None}
    return {"rate": rate, "min_runs": min_runs, "runs_needed": rules.runs_needed(rate)}


def _page(request, suite, **overrides):
    """The whole settings page; ``overrides`` replace a section's form or add a notice."""
    tiers = dict(Node.objects.filter(suite=suite).values_list("tier").annotate(c=Count("pk")))
    context = {
        "suite": suite,
        "nav": "settings",
        "policy_form": PolicyForm.for_suite(suite),
        "helper": _runs_needed(suite),
        "pin_form": FixturePinForm.for_suite(suite),
        "rule_form": TierRuleForm(),
        "tier_rules": list(TierRule.objects.filter(suite=suite)),
        "tier_counts": [(tier, tiers.get(tier, 0)) for tier in rules.Tier.ALL],
        "member_form": MemberForm(),
        "members": list(
            Membership.objects.filter(suite=suite).select_related("user").order_by("user__username")
        ),
        "roles": Role.choices,
        "token_form": TokenForm(),
        "tokens": list(ApiToken.objects.filter(suite=suite)),
        "events": list(
            AuditEvent.objects.filter(suite=suite, action__in=SETTINGS_ACTIONS).order_by(
                "-at", "-id"
            )[:HISTORY_LIMIT]
        ),
        **overrides,
    }
    return render(request, "ledger/settings.html", context)


@login_required
@require_GET
def settings_page(request, suite):
    return _page(request, _lead_suite(request, suite))


@login_required
@require_POST
def policy(request, suite):
    suite = _lead_suite(request, suite)
    form = PolicyForm(request.POST)
    if form.is_valid():
        data = dict(form.cleaned_data)
        note = data.pop("note")
        try:
            policy_update(suite=suite, actor=actor_label(request.user), note=note, **data)
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, "Policy saved.")
            return _back(suite, "policy")
    return _page(request, suite, policy_form=form)


@login_required
@require_GET
def runs_needed(request, suite):
    """The helper again, for the numbers being typed into the policy form."""
    suite = _lead_suite(request, suite)
    helper = _runs_needed(suite, request.GET.get("max_upper_rate"), request.GET.get("min_runs"))
    return render(request, "ledger/settings.html#runs_needed", {"suite": suite, "helper": helper})


@login_required
@require_POST
def fixture_pin(request, suite):
    suite = _lead_suite(request, suite)
    form = FixturePinForm(request.POST)
    if form.is_valid():
        try:
            fixture_pin_set(
                suite=suite,
                actor=actor_label(request.user),
                manifest=form.cleaned_data["fixture_manifest"],
                seed=form.cleaned_data["fixture_seed"],
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, "Fixture pin saved.")
            return _back(suite, "fixture-pin")
    return _page(request, suite, pin_form=form)


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


@login_required
@require_GET
def tier_rule_preview(request, suite):
    suite = _lead_suite(request, suite)
    form = TierRuleForm(request.GET)
    preview = None
    if form.is_valid():
        preview = _preview(suite, form.cleaned_data["glob"], form.cleaned_data["tier"])
    if wants_partial(request):
        return render(request, "ledger/settings.html#rule_preview",
                      {"suite": suite, "preview": preview})
    return _page(request, suite, rule_form=form, preview=preview)


@login_required
@require_POST
def tier_rule_add(request, suite):
    suite = _lead_suite(request, suite)
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
            f"Rule “{glob}” added: {len(warned)} quarantine "
            f"{'entry is' if len(warned) == 1 else 'entries are'} now tier violations.",
        )
    else:
        messages.success(request, f"Rule “{glob}” added.")
    return _back(suite, "tier-rules")


@login_required
@require_POST
def tier_rule_remove(request, suite, pk):
    suite = _lead_suite(request, suite)
    rule = get_object_or_404(TierRule, suite=suite, pk=pk)
    remove_rule(rule=rule, actor=actor_label(request.user))
    messages.success(request, f"Rule “{rule.glob}” removed.")
    return _back(suite, "tier-rules")


@login_required
@require_POST
def member_set(request, suite):
    suite = _lead_suite(request, suite)
    form = MemberForm(request.POST)
    if form.is_valid():
        try:
            membership = member_change(
                suite=suite, actor=actor_label(request.user), **form.cleaned_data
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(
                request, f"{membership.user.get_username()} is {membership.role} of {suite.slug}."
            )
            return _back(suite, "members")
    return _page(request, suite, member_form=form)


@login_required
@require_POST
def member_remove(request, suite, pk):
    suite = _lead_suite(request, suite)
    membership = get_object_or_404(Membership.objects.select_related("user"), suite=suite, pk=pk)
    try:
        member_drop(membership=membership, actor=actor_label(request.user))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"{membership.user.get_username()} removed from {suite.slug}.")
    return _back(suite, "members")


@login_required
@require_POST
@never_cache
def token_create(request, suite):
    suite = _lead_suite(request, suite)
    form = TokenForm(request.POST)
    if not form.is_valid():
        return _page(request, suite, token_form=form)
    token, raw = create_token(
        suite=suite, actor=actor_label(request.user), **form.cleaned_data
    )
    # Shown in this response only: the token is stored as a digest and never shown again.
    return _page(request, suite, new_token=token, new_token_raw=raw)


@login_required
@require_POST
def token_revoke(request, suite, pk):
    suite = _lead_suite(request, suite)
    token = get_object_or_404(ApiToken, suite=suite, pk=pk)
    revoke_token(token=token, actor=actor_label(request.user))
    messages.success(request, f"Token {token.prefix}… revoked.")
    return _back(suite, "tokens")
