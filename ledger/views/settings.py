"""The leads' settings page: policy, fixture pin, badge, auto-clear, the new-test guard,
the test set, JUnit and CODEOWNERS, and the frame of every section's view.

One page shows every section; each form posts to its own view, which calls the service
and comes back to the page. Tier rules are in ``settings_tiers``, members, tokens and
trusted CI in ``settings_access``; the Webhook and Issue tracker sections are the notify
and trackers apps', loaded into the page with htmx.
"""

import json
from dataclasses import replace
from functools import partial, wraps

from django.conf import settings as django_settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import Count
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache

from flakeboard import rules
from ledger.access import actor_label, for_leads
from web.csv import CSV_CHUNK, csv_response
from web.pages import percent

from ..audit import BOARD_ACTOR
from ..codeowners import codeowners_saved, codeowners_set, suite_codeowners
from ..forms.settings import (
    AutoClearForm,
    BadgeForm,
    CodeownersForm,
    DefaultBranchForm,
    FixturePinForm,
    JUnitShareForm,
    MeasureBudgetForm,
    MemberForm,
    NewTestsForm,
    PolicyForm,
    TierRuleForm,
    TokenForm,
    TrustPolicyForm,
)
from ..models import ApiToken, AuditEvent, Membership, Node, Role, TierRule, TrustPolicy
from ..selectors import share_figures
from ..settings_services import (
    auto_clear_set,
    badge_visibility_set,
    default_branch_set,
    fixture_pin_set,
    junit_share_set,
    measure_budget_set,
    new_tests_set,
    policy_update,
)
from ..tokens import tokens_expiring
from ..trust import guards

SETTINGS_ACTIONS = [
    AuditEvent.Action.SETTINGS,
    AuditEvent.Action.TIER_RULE,
    AuditEvent.Action.MEMBER,
    AuditEvent.Action.TOKEN,
    AuditEvent.Action.TARGET,
]
HISTORY_LIMIT = 20


def _back(suite, section: str):
    return redirect(reverse("settings", args=[suite.slug]) + f"#{section}")


def _done(request, suite, section: str, notice: str):
    messages.success(request, notice)
    return _back(suite, section)


def _runs_needed(suite, rate_text=None, min_runs_text=None) -> dict:
    """The runs-needed helper for a max_upper_rate (the suite's, or one being typed as a
    percent)."""
    fields = PolicyForm.base_fields
    rate, min_runs = suite.max_upper_rate, suite.min_runs
    try:
        if rate_text is not None:
            rate = fields["max_upper_rate"].clean(rate_text)
        if min_runs_text is not None:
            min_runs = fields["min_runs"].clean(min_runs_text)
    except ValidationError:
        return {"rate": None}
    return {"rate": rate, "rate_pct": percent(rate), "min_runs": min_runs,
            "runs_needed": rules.runs_needed(rate)}


def _guard(suite) -> dict:
    """What the new-test guard's runs show, for the settings page: the bound of a clean
    new test, and the chance a test failing one run in ten, or in twenty, is caught."""
    runs = suite.new_test_runs
    return {"runs": runs, "sentence": rules.birth_sentence(runs, 0),
            "catch": [(percent(rate), percent(rules.catch_chance(rate, runs)))
                      for rate in (0.2, 0.1, 0.05)]}


def _page(request, suite, **overrides):
    """The whole settings page; ``overrides`` replace a section's form or add a notice."""
    tiers = dict(Node.objects.filter(suite=suite).values_list("tier").annotate(c=Count("pk")))
    tokens = _tokens(suite)
    policies = list(TrustPolicy.objects.filter(suite=suite))
    context = {
        "suite": suite,
        "nav": "settings",
        "policy_form": PolicyForm.for_suite(suite),
        "helper": _runs_needed(suite),
        "pin_form": FixturePinForm.for_suite(suite),
        "badge_form": BadgeForm.for_suite(suite),
        "auto_clear_form": AutoClearForm.for_suite(suite),
        "board_actor": BOARD_ACTOR,
        "junit_form": JUnitShareForm.for_suite(suite),
        "new_tests_form": NewTestsForm.for_suite(suite),
        "measure_budget_form": MeasureBudgetForm.for_suite(suite),
        "guard": _guard(suite),
        "branch_form": DefaultBranchForm.for_suite(suite),
        **_test_set(suite),
        "codeowners_form": CodeownersForm.for_suite(suite),
        "codeowners": suite_codeowners(suite),
        "badge_url": request.build_absolute_uri(reverse("badge", args=[suite.slug])),
        "overview_url": request.build_absolute_uri(reverse("overview", args=[suite.slug])),
        "rule_form": TierRuleForm(),
        "tier_rules": list(TierRule.objects.filter(suite=suite)),
        "tier_counts": [(tier, tiers.get(tier, 0)) for tier in rules.Tier.ALL],
        "member_form": MemberForm(),
        "members": list(
            Membership.objects.filter(suite=suite).select_related("user").order_by("user__username")
        ),
        "roles": Role.choices,
        "token_form": TokenForm(),
        "tokens": tokens,
        "trust_policies": policies,
        "trust_form": TrustPolicyForm(),
        "board_url": django_settings.BASE_URL,
        "test_set_guarded": bool(policies) or any(guards(token) for token in tokens),
        "expiring_tokens": list(tokens_expiring([suite], timezone.now())),
        "events": list(
            AuditEvent.objects.filter(suite=suite, action__in=SETTINGS_ACTIONS).order_by(
                "-at", "-id"
            )[:HISTORY_LIMIT]
        ),
        **overrides,
    }
    return render(request, "ledger/settings.html", context)


def _test_set(suite) -> dict:
    """The test set now and where its size came from, as the Test set section says it."""
    figures = share_figures(suite, timezone.now().date())
    return {"test_set": figures, "test_set_pct": percent(figures.share),
            "test_set_cap": percent(figures.cap), "ci_run_days": rules.KNOWN_NODE_WINDOW_DAYS}


def _tokens(suite) -> list[ApiToken]:
    now = timezone.now()
    tokens = list(ApiToken.objects.filter(suite=suite))
    for token in tokens:
        token.expired = token.is_expired(now)
    return tokens


AUDIT_CSV_HEADER = ("at", "actor", "action", "node", "before", "after", "note")


@for_leads("GET")
def audit_csv(request, suite):
    """The suite's whole audit trail as CSV, oldest first: every event, of the settings and of
    each entry (its node named), whose latest settings events the History section shows."""
    events = (
        AuditEvent.objects.filter(suite=suite).order_by("at", "id")
        .values_list("at", "actor", "action", "entry__node__nodeid", "before", "after", "note")
    )
    rows = (
        (at.isoformat(), actor, action, node or "", _json(before), _json(after), note)
        for at, actor, action, node, before, after, note in events.iterator(chunk_size=CSV_CHUNK)
    )
    return csv_response(f"{suite.slug}-audit.csv", AUDIT_CSV_HEADER, rows)


def _json(changed: dict) -> str:
    return json.dumps(changed, sort_keys=True, ensure_ascii=False) if changed else ""


def _saved(request, suite, form, save, *, section: str, form_name: str):
    """Back to the page's ``section`` once ``save`` has taken the valid form's data (it
    answers the notice to show); else the page again, the form showing what was refused."""
    if form.is_valid():
        try:
            notice = save(form.cleaned_data)
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            return _done(request, suite, section, notice)
    return _page(request, suite, **{form_name: form})


def _section(form_class, *, section: str, form_name: str):
    """A section's POST view: its form (the page's ``form_name``) reads the POST, and the
    view's own ``save(suite, data, actor)`` takes the valid form's data, changed by the lead
    (``actor``), and answers the notice shown back at ``section``; see ``_saved``."""

    def decorate(save):
        @for_leads("POST")
        @wraps(save)
        def view(request, suite):
            form = form_class(request.POST, request.FILES)
            return _saved(request, suite, form,
                          partial(save, suite, actor=actor_label(request.user)),
                          section=section, form_name=form_name)

        return view

    return decorate


def _removal(rows, *, section: str):
    """A POST view that acts on the suite's row of ``rows`` (a model or a QuerySet) of the
    URL's pk (404 for none): the view's own ``act(row, actor)`` does it as the lead
    (``actor``) and answers the notice shown back at ``section``; a refusal
    (ValidationError) is shown as an error."""

    def decorate(act):
        @for_leads("POST")
        @wraps(act)
        def view(request, suite, pk):
            row = get_object_or_404(rows, suite=suite, pk=pk)
            try:
                notice = act(row, actor=actor_label(request.user))
            except ValidationError as exc:
                messages.error(request, " ".join(exc.messages))
                return _back(suite, section)
            return _done(request, suite, section, notice)

        return view

    return decorate


def _new_token_key(suite) -> str:
    return f"new_token:{suite.pk}"


@for_leads("GET")
@never_cache
def settings_page(request, suite):
    """The page; once after a token is created, with its secret (see ``token_create``)."""
    made = request.session.pop(_new_token_key(suite), None)
    token = made and ApiToken.objects.filter(suite=suite, pk=made["pk"]).first()
    if token:
        return _page(request, suite, new_token=token, new_token_raw=made["raw"])
    return _page(request, suite)


def _cap_lowered_over_share(suite, new_cap: float) -> rules.ShareFigures | None:
    """The share's figures under ``new_cap`` when lowering the cap to it leaves the share
    over it (the next report would fail with quarantine_cap_exceeded); else None."""
    if new_cap >= suite.max_quarantined_share:
        return None
    now = share_figures(suite, timezone.now().date())
    lowered = replace(now, cap=new_cap)
    return lowered if lowered.over_cap else None


@for_leads("POST")
def policy(request, suite):
    def save(data):
        policy_update(suite=suite, actor=actor_label(request.user), **form.policy())
        return "Policy saved."

    form = PolicyForm(request.POST)
    if form.is_valid() and not form.cleaned_data["confirm"]:
        figures = _cap_lowered_over_share(suite, form.cleaned_data["max_quarantined_share"])
        if figures is not None:
            again = PolicyForm({**request.POST.dict(), "confirm": "1"})
            return _page(request, suite, policy_form=again, cap_warning={
                "figures": figures, "share": percent(figures.share), "cap": percent(figures.cap),
                "old_cap": percent(suite.max_quarantined_share),
            })
    return _saved(request, suite, form, save, section="policy", form_name="policy_form")


@for_leads("GET")
def runs_needed(request, suite):
    """The helper again, for the numbers being typed into the policy form."""
    helper = _runs_needed(suite, request.GET.get("max_upper_rate"), request.GET.get("min_runs"))
    return render(request, "ledger/settings.html#runs_needed", {"suite": suite, "helper": helper})


@_section(FixturePinForm, section="fixture-pin", form_name="pin_form")
def fixture_pin(suite, data, actor):
    fixture_pin_set(suite=suite, actor=actor, manifest=data["fixture_manifest"],
                    seed=data["fixture_seed"])
    return "Fixture pin saved."


@_section(BadgeForm, section="badge", form_name="badge_form")
def badge(suite, data, actor):
    badge_visibility_set(suite=suite, actor=actor, public=data["public_badge"])
    return "The badge is public." if data["public_badge"] else "The badge is private."


@_section(AutoClearForm, section="auto-clear", form_name="auto_clear_form")
def auto_clear(suite, data, actor):
    auto_clear_set(suite=suite, actor=actor, on=data["auto_clear"])
    if data["auto_clear"]:
        return "Auto-clear is on: manage.py notify clears each entry ready to clear."
    return "Auto-clear is off: entries ready to clear wait for their owner."


@_section(JUnitShareForm, section="junit", form_name="junit_form")
def junit_share(suite, data, actor):
    share = data["junit_infrastructure_share"]
    junit_share_set(suite=suite, actor=actor, share=share)
    return (f"A JUnit file with more than {share:.0%} of its tests failing is now taken "
            f"for an infrastructure failure.")


@_section(NewTestsForm, section="new-tests", form_name="new_tests_form")
def new_tests(suite, data, actor):
    saved = new_tests_set(suite=suite, actor=actor, runs=data["new_test_runs"],
                          share=data["new_test_share"])
    return (f"gate --measure now runs each new test up to {saved.new_test_runs} times, "
            f"for at most {saved.new_test_share:.0%} of a selection.")


@_section(MeasureBudgetForm, section="measure-budget", form_name="measure_budget_form")
def measure_budget(suite, data, actor):
    saved = measure_budget_set(suite=suite, actor=actor, seconds=data["measure_budget"])
    return (f"gate --measure now spends at most about {saved.measure_budget} s on the "
            f"tier-2 tests a patch calls for.")


@_section(DefaultBranchForm, section="test-set", form_name="branch_form")
def default_branch(suite, data, actor):
    saved = default_branch_set(suite=suite, actor=actor, branch=data["default_branch"])
    return f"CI's runs on {saved.default_branch} now size the test set."


@_section(CodeownersForm, section="codeowners", form_name="codeowners_form")
def codeowners(suite, data, actor):
    return codeowners_saved(codeowners_set(suite=suite, text=data["codeowners"], actor=actor))
