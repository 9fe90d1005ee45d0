"""The settings page's people and credentials: members and their roles, API tokens (each
shown once) and the CI it trusts without a token."""

from django.core.exceptions import ValidationError
from django.views.decorators.cache import never_cache

from ledger.access import actor_label, for_leads

from ..forms.settings import MemberForm, TokenForm, TrustPolicyForm
from ..models import ApiToken, Membership, TrustPolicy
from ..settings_services import member_change, member_drop
from ..tokens import token_create as create_token
from ..tokens import token_revoke as revoke_token
from ..trust import trust_policy_add, trust_policy_remove
from .settings import _back, _new_token_key, _page, _removal, _section


@_section(MemberForm, section="members", form_name="member_form")
def member_set(suite, data, actor):
    membership = member_change(suite=suite, actor=actor, **data)
    return f"{membership.user.get_username()} is {membership.role} of {suite.slug}."


@_removal(Membership.objects.select_related("user"), section="members")
def member_remove(membership, actor):
    member_drop(membership=membership, actor=actor)
    return f"{membership.user.get_username()} removed from {membership.suite.slug}."


@for_leads("POST")
@never_cache
def token_create(request, suite):
    form = TokenForm(request.POST)
    if not form.is_valid():
        return _page(request, suite, token_form=form)
    try:
        token, raw = create_token(
            suite=suite, actor=actor_label(request.user), **form.cleaned_data
        )
    except ValidationError as exc:
        form.add_error(
            "default_branch_only" if exc.code == "default_branch_read" else "expires_at", exc)
        return _page(request, suite, token_form=form)
    # Post, redirect, get: a reload of the page shown next neither makes a second token nor
    # shows this one again. The token is stored as a digest; its secret waits in the session
    # only until that page is drawn, and leaves it there.
    request.session[_new_token_key(suite)] = {"pk": token.pk, "raw": raw}
    return _back(suite, "new-token-once")


@_removal(ApiToken, section="tokens")
def token_revoke(token, actor):
    revoke_token(token=token, actor=actor)
    return f"Token {token.prefix}… revoked."


@_section(TrustPolicyForm, section="trusted-ci", form_name="trust_form")
def trust_policy_create(suite, data, actor):
    policy = trust_policy_add(suite=suite, actor=actor, **data)
    return f"The suite trusts {policy.label}."


@_removal(TrustPolicy, section="trusted-ci")
def trust_policy_delete(policy, actor):
    trust_policy_remove(policy=policy, actor=actor)
    return f"The suite no longer trusts {policy.label}."
