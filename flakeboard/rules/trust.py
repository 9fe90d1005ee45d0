"""Which uploads may size the test set (docs/trusted-ci.md).

CI's runs on the default branch size the test set (``ci_run``), but an upload's branch is
what its uploader states, and a write token is usually every CI job's, a pull request's
included: anyone holding it could send thousands of made-up tests "on main". So a suite
may keep a write token for its default branch alone (a protected CI variable): once it
does, the suite is *guarded*, and only such a token's uploads size its test set. Any
other upload stating the default branch is stored as evidence as before, flagged
``test_set_untrusted``, and never moves the figure. A suite that keeps no such token
takes the branch its uploaders state, as it always did.
"""

from __future__ import annotations

from enum import StrEnum


class Credential(StrEnum):
    """What vouches for an upload's branch."""

    STATED = "stated"  # a plain write token: the branch is what the upload says
    DEFAULT_BRANCH = "default_branch"  # a write token kept for the default branch only


class Sizing(StrEnum):
    """What an upload does to the test set."""

    SIZES = "sizes"  # of the default branch, and trusted to say so
    OTHER_BRANCH = "other_branch"  # another branch, or none: never sizes it
    UNTRUSTED = "untrusted"  # states the default branch on a guarded suite, unvouched


# The flag an untrusted upload carries, in its answer and where it is shown.
TEST_SET_UNTRUSTED = "test_set_untrusted"
TRUSTED_CREDENTIALS = frozenset({Credential.DEFAULT_BRANCH})


def credential_branch(credential: Credential, *, stated: str, default_branch: str) -> str | None:
    """The branch an upload is of. A default-branch-only token's upload is of the default
    branch, stated or not, and one stating another branch is refused (None): the token is
    kept where only that branch's jobs can read it, so a different branch means it leaked
    or CI is misconfigured. Any other credential's upload is of the branch it states."""
    if credential is Credential.DEFAULT_BRANCH:
        return default_branch if stated in ("", default_branch) else None
    return stated


def upload_sizing(*, credential: Credential, branch: str, default_branch: str,
                  guarded: bool) -> Sizing:
    """What an upload of ``branch`` sent with ``credential`` does to the test set, on a
    suite that is ``guarded`` (it keeps a default-branch-only token) or not."""
    if branch != default_branch:
        return Sizing.OTHER_BRANCH
    if guarded and credential not in TRUSTED_CREDENTIALS:
        return Sizing.UNTRUSTED
    return Sizing.SIZES


def may_size_test_set(*, credential: Credential, branch: str, default_branch: str,
                      guarded: bool) -> bool:
    """The upload's tests may count in its commit's CI run, which sizes the test set."""
    return upload_sizing(credential=credential, branch=branch, default_branch=default_branch,
                         guarded=guarded) is Sizing.SIZES
