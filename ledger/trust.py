"""Who may size the test set (``rules.trust``; docs/trusted-ci.md): what vouches for an
upload's facts, whether a suite trusts only vouched uploads, and the facts an upload
states as its credential vouches for them. The JUnit and report uploads both ask here, so
the rule is kept in one place. And the suite's trust policies, which a lead keeps on the
settings page."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Exists, OuterRef, Q

from flakeboard import rules

from .audit import record_event
from .models import ApiToken, AuditEvent, Suite, TrustPolicy
from .oidc import CiIdentity
from .refusals import Code, WireProblem


def credential_of(token: ApiToken | CiIdentity) -> rules.Credential:
    """What the token vouches for: a CI's signed ref, the default branch, or only what the
    upload states."""
    if isinstance(token, CiIdentity):
        return token.facts.credential
    if token.default_branch_only:
        return rules.Credential.DEFAULT_BRANCH
    return rules.Credential.STATED


def signed_of(token: ApiToken | CiIdentity) -> rules.SignedFacts | None:
    """A verified CI token's facts (None for a board token)."""
    return token.facts if isinstance(token, CiIdentity) else None


# A token that guards its suite's test set: kept for the default branch, and not revoked.
# An expired one still guards, since only a lead's revoking it says the suite has given
# it up (an expiry passing would otherwise hand the figure back to every uploader).
GUARDS = Q(default_branch_only=True, revoked_at__isnull=True)


def guards(token: ApiToken) -> bool:
    """``GUARDS``, of a token already read (the settings page lists them all)."""
    return token.default_branch_only and token.revoked_at is None


def guarded_test_set(suite: Suite) -> bool:
    """The suite keeps a token that ``GUARDS`` its test set, or a trust policy: then only
    uploads such a token or its CI's signed default ref vouches for size it."""
    guarding = ApiToken.objects.filter(GUARDS, suite=OuterRef("pk"))
    policy = TrustPolicy.objects.filter(suite=OuterRef("pk"))
    return Suite.objects.filter(Exists(guarding) | Exists(policy), pk=suite.pk).exists()


def vouched(suite: Suite, credential: rules.Credential, signed: rules.SignedFacts | None,
            stated: dict) -> tuple[dict, list[WireProblem]]:
    """An upload's facts (``stated``: some of branch, commit, attempt; "" or None where
    not stated) as its credential vouches for them, or why they are refused. A verified
    CI token's claims win (``rules.signed_facts``): a stated value that disagrees is
    refused, naming the field and the claim. A default-branch-only token's upload is the
    default branch's (``rules.credential_branch``)."""
    default = suite.default_branch
    if signed is not None:
        found = [WireProblem(
            Code.INVALID_VALUE,
            f"is {stated[field]!r}, but the CI's signed token says otherwise in its {claim} "
            f"claim: leave it out, or state what the CI signed", field=field)
            for field, claim in rules.signed_disagreements(signed, stated)]
        values = {**stated, "branch": rules.signed_branch(signed, default),
                  "commit": rules.canonical_commit(signed.commit) or stated.get("commit", "")}
        if "attempt" in stated and signed.attempt is not None:
            values["attempt"] = signed.attempt
        return values, found
    branch = rules.credential_branch(credential, stated=stated.get("branch") or "",
                                     default_branch=default)
    if branch is not None:
        return {**stated, "branch": branch}, []
    return stated, [WireProblem(
        Code.INVALID_VALUE,
        f"is {stated['branch']!r}, but this token is for the default branch only "
        f"({default}): send another branch's uploads with another token, or leave the "
        "branch out",
        field="branch",
    )]


def _policy_fields(suite: Suite, *, kind: str, issuer: str, repository: str, workflow: str,
                   default_ref: str) -> dict:
    """A policy's fields, checked: GitHub's issuer is GitHub's own; GitLab's and a custom
    one an http(s) URL; a repository; the default ref, by default the suite's default
    branch as the issuer names it (GitHub: refs/heads/main; GitLab: main)."""
    try:
        kind = rules.Issuer(kind)
    except ValueError:
        raise ValidationError({"kind": f"{kind!r} is not an issuer this board knows."}
                              ) from None
    issuer = rules.GITHUB_ISSUER if kind is rules.Issuer.GITHUB else issuer.strip()
    errors = {}
    if not issuer.startswith(("https://", "http://")) or len(issuer) > 200:
        errors["issuer"] = "The issuer is its URL, as the tokens' iss claim gives it."
    repository, workflow = repository.strip(), workflow.strip()
    if not repository or len(repository) > 200:
        errors["repository"] = "The repository (GitLab: the project's path) is required."
    default_ref = default_ref.strip() or (
        f"refs/heads/{suite.default_branch}" if kind is not rules.Issuer.GITLAB
        else suite.default_branch)
    if len(default_ref) > rules.META_MAX_LENGTH or rules.has_control_chars(default_ref):
        errors["default_ref"] = "The default branch's ref, as the tokens' ref claim gives it."
    if errors:
        raise ValidationError(errors)
    return {"kind": kind.value, "issuer": issuer.rstrip("/") if kind is not rules.Issuer.GITHUB
            else issuer, "repository": repository, "workflow": workflow,
            "default_ref": default_ref}


def trust_policy_add(*, suite: Suite, actor: str, kind: str, issuer: str = "",
                     repository: str, workflow: str = "", default_ref: str = "") -> TrustPolicy:
    """Trust a CI's OIDC tokens (docs/trusted-ci.md); audited. From now on the suite is
    guarded: only signed default-ref uploads and default-branch-only tokens size its
    test set."""
    fields = _policy_fields(suite, kind=kind, issuer=issuer, repository=repository,
                            workflow=workflow, default_ref=default_ref)
    with transaction.atomic():
        policy = TrustPolicy.objects.create(suite=suite, created_by=actor, **fields)
        record_event(suite=suite, action=AuditEvent.Action.SETTINGS, actor=actor,
                     after={"trust_policy": policy.label}, note="trusted CI added")
    return policy


def trust_policy_remove(*, policy: TrustPolicy, actor: str) -> None:
    with transaction.atomic():
        record_event(suite=policy.suite, action=AuditEvent.Action.SETTINGS, actor=actor,
                     before={"trust_policy": policy.label}, note="trusted CI removed")
        policy.delete()
