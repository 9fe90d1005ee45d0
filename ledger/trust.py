"""Who may size the test set (``rules.trust``; docs/trusted-ci.md): what vouches for an
upload's branch, whether a suite trusts only vouched uploads, and the branch an upload
is of. The JUnit and report uploads both ask here, so the rule is kept in one place."""

from __future__ import annotations

from django.db.models import Q

from flakeboard import rules

from .models import ApiToken, Suite
from .refusals import Code, WireProblem


def credential_of(token: ApiToken) -> rules.Credential:
    """What the token vouches for: the default branch, or only what the upload states."""
    if token.default_branch_only:
        return rules.Credential.DEFAULT_BRANCH
    return rules.Credential.STATED


# A token that guards its suite's test set: kept for the default branch, and not revoked.
# An expired one still guards, since only a lead's revoking it says the suite has given
# it up (an expiry passing would otherwise hand the figure back to every uploader).
GUARDS = Q(default_branch_only=True, revoked_at__isnull=True)


def guards(token: ApiToken) -> bool:
    """``GUARDS``, of a token already read (the settings page lists them all)."""
    return token.default_branch_only and token.revoked_at is None


def guarded_test_set(suite: Suite) -> bool:
    """The suite keeps a token that ``GUARDS`` its test set: then only uploads such a
    token vouches for size it."""
    return ApiToken.objects.filter(GUARDS, suite=suite).exists()


def upload_branch(suite: Suite, credential: rules.Credential,
                  stated: str) -> tuple[str, WireProblem | None]:
    """The branch an upload is of (``rules.credential_branch``), or why it is refused: a
    default-branch-only token stating another branch."""
    branch = rules.credential_branch(credential, stated=stated,
                                     default_branch=suite.default_branch)
    if branch is not None:
        return branch, None
    return stated, WireProblem(
        Code.INVALID_VALUE,
        f"is {stated!r}, but this token is for the default branch only "
        f"({suite.default_branch}): send another branch's uploads with another token, or "
        "leave the branch out",
        field="branch",
    )
