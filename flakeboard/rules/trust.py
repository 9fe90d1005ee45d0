"""Which uploads may size the test set (docs/trusted-ci.md).

CI's runs on the default branch size the test set (``ci_run``), but an upload's branch is
what its uploader states, and a write token is usually every CI job's, a pull request's
included: anyone holding it could send thousands of made-up tests "on main". So a suite
may keep a write token for its default branch alone (a protected CI variable): once it
does, the suite is *guarded*, and only such a token's uploads size its test set. Any
other upload stating the default branch is stored as evidence as before, flagged
``test_set_untrusted``, and never moves the figure. A suite that keeps no such token
takes the branch its uploaders state, as it always did.

A suite may also trust its CI's own OIDC tokens (trust policies: an issuer, a repository,
optionally a workflow, and the default branch's ref). A verified token's claims are the
upload's facts (``signed_facts``): its branch, commit, attempt and run, and whether its
ref is the default branch's, which alone lets it size the test set. A stated value that
disagrees with a claim is refused (``signed_disagreements``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from .commits import canonical_commit


class Credential(StrEnum):
    """What vouches for an upload's branch."""

    STATED = "stated"  # a plain write token: the branch is what the upload says
    DEFAULT_BRANCH = "default_branch"  # a write token kept for the default branch only
    SIGNED_DEFAULT = "signed_default"  # a CI's OIDC token, its ref the default branch's
    SIGNED_OTHER = "signed_other"  # a CI's OIDC token of any other ref (a pull request's)


class Sizing(StrEnum):
    """What an upload does to the test set."""

    SIZES = "sizes"  # of the default branch, and trusted to say so
    OTHER_BRANCH = "other_branch"  # another branch, or none: never sizes it
    UNTRUSTED = "untrusted"  # states the default branch on a guarded suite, unvouched


# The flag an untrusted upload carries, in its answer and where it is shown.
TEST_SET_UNTRUSTED = "test_set_untrusted"
TRUSTED_CREDENTIALS = frozenset({Credential.DEFAULT_BRANCH, Credential.SIGNED_DEFAULT})
SIGNED_CREDENTIALS = frozenset({Credential.SIGNED_DEFAULT, Credential.SIGNED_OTHER})


class Issuer(StrEnum):
    """Whose claims a trust policy reads."""

    GITHUB = "github"
    GITLAB = "gitlab"
    CUSTOM = "custom"  # claims named as GitHub names them


GITHUB_ISSUER = "https://token.actions.githubusercontent.com"


@dataclass(frozen=True)
class SignedFacts:
    """What a verified OIDC token says of the job that holds it."""

    branch: str
    commit: str
    attempt: int | None  # GitHub's run_attempt; GitLab's jobs have none (a retry is a job)
    run: str  # GitHub's run_id, GitLab's pipeline_id/job_id
    default_ref: bool  # its ref is the trust policy's default branch ref
    claims: dict  # the upload field -> the claim it comes from, for messages

    @property
    def credential(self) -> Credential:
        return Credential.SIGNED_DEFAULT if self.default_ref else Credential.SIGNED_OTHER

    @property
    def origin(self) -> str:
        """The job run that holds the token, as an upload's digest takes it: the same body
        sent again by the same run is a replay, and by a re-run of the job (GitHub's next
        run_attempt, GitLab's new job_id) a new attempt."""
        return self.run if self.attempt is None else f"{self.run} attempt {self.attempt}"


def _claim(claims: dict, name: str) -> str:
    value = claims.get(name)
    return value if isinstance(value, str) else "" if value is None else str(value)


def _branch_of_ref(ref: str) -> str:
    return ref.removeprefix("refs/heads/")


def policy_problem(kind: Issuer, claims: dict, *, repository: str, workflow: str) -> str | None:
    """Why a verified token's claims do not match a policy's repository and workflow (None:
    they do). GitHub (and a custom issuer) name the repository ``repository`` and the
    workflow in ``workflow_ref`` (``owner/repo/.github/workflows/x.yml@ref``); GitLab names
    the project ``project_path`` and its CI file in ``ci_config_ref_uri``
    (``host/group/project//.gitlab-ci.yml@ref``)."""
    name = "project_path" if kind is Issuer.GITLAB else "repository"
    if _claim(claims, name) != repository:
        return f"its {name} claim is {_claim(claims, name)!r}, not {repository!r}"
    if workflow:
        source = "ci_config_ref_uri" if kind is Issuer.GITLAB else "workflow_ref"
        where = _claim(claims, source).partition("@")[0]
        path = where.partition("//")[2] if kind is Issuer.GITLAB else where.removeprefix(
            repository + "/")
        if path != workflow:
            return f"its {source} claim names {path or 'no file'!r}, not the workflow {workflow!r}"
    return None


def signed_facts(kind: Issuer, claims: dict, *, default_ref: str) -> SignedFacts:
    """An upload's facts from a verified token's claims. GitHub: ``ref`` (a pull request's
    branch from ``head_ref``), ``sha``, ``run_attempt``, ``run_id``. GitLab: ``ref`` (with
    ``ref_protected``: the default ref counts only when GitLab protects it), ``sha``,
    ``pipeline_id`` and ``job_id``. The default branch is told by the signed ``ref`` alone,
    never by a branch's name: a fork's pull request may name its branch ``main``."""
    ref = _claim(claims, "ref")
    if kind is Issuer.GITLAB:
        protected = _claim(claims, "ref_protected") == "true"
        run = f"pipeline {_claim(claims, 'pipeline_id')} job {_claim(claims, 'job_id')}"
        return SignedFacts(ref, _claim(claims, "sha"), None, run,
                           ref == default_ref and protected,
                           {"branch": "ref", "commit": "sha"})
    attempt = _claim(claims, "run_attempt")
    branch = _claim(claims, "head_ref") or _branch_of_ref(ref)
    return SignedFacts(branch, _claim(claims, "sha"),
                       int(attempt) if attempt.isdigit() and int(attempt) > 0 else None,
                       f"run {_claim(claims, 'run_id')}", ref == default_ref,
                       {"branch": "head_ref" if _claim(claims, "head_ref") else "ref",
                        "commit": "sha", "attempt": "run_attempt"})


def signed_disagreements(facts: SignedFacts, stated: dict) -> list[tuple[str, str]]:
    """The stated values (field -> value; empty or None: not stated) that disagree with
    the signed ones, as (field, claim). Commits compare in their canonical form."""
    signed = {"branch": facts.branch, "commit": canonical_commit(facts.commit),
              "attempt": facts.attempt}
    found = []
    for field, value in stated.items():
        if value in ("", None) or signed.get(field) is None or field not in facts.claims:
            continue
        if (canonical_commit(value) if field == "commit" else value) != signed[field]:
            found.append((field, facts.claims[field]))
    return found


def credential_branch(credential: Credential, *, stated: str, default_branch: str) -> str | None:
    """The branch an upload is of. A default-branch-only token's upload is of the default
    branch, stated or not, and one stating another branch is refused (None): the token is
    kept where only that branch's jobs can read it, so a different branch means it leaked
    or CI is misconfigured. Any other credential's upload is of the branch it states."""
    if credential is Credential.DEFAULT_BRANCH:
        return default_branch if stated in ("", default_branch) else None
    return stated


def signed_branch(facts: SignedFacts, default_branch: str) -> str:
    """The branch of a verified token's upload: the default branch when its ref is the
    policy's default ref; otherwise its own branch, which even when it is named as the
    default branch never sizes the test set (``upload_sizing``: not a trusted credential)."""
    return default_branch if facts.default_ref else facts.branch


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
