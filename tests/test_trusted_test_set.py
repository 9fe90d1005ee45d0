"""Only trusted uploads size the test set (docs/trusted-ci.md). A write token is usually
every CI job's, so a branch an upload states proves nothing: once a suite keeps a write
token for its default branch alone, only that token's JUnit sizes the test set. A plain
token's file stating the default branch is kept as evidence, flagged
``test_set_untrusted``, and never moves the figure. A suite with no such token keeps
taking the branch its uploaders state, and its settings page says so."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from flakeboard import rules
from flakeboard.rules import Credential, Sizing
from junit.models import JUnitFile
from ledger.models import ApiToken, AuditEvent
from ledger.selectors import share_figures
from ledger.tokens import token_authenticate, token_create, token_revoke
from tests.api_http import API
from tests.helpers import body, measurement
from tests.junit_files import XML, junit_xml

STATED, SCOPED = Credential.STATED, Credential.DEFAULT_BRANCH
PROJECTS = {"py3.12": 60, "py3.13": 41}  # the demo's 101 tests, in two jobs


def cases(count: int, stem: str = "test_case") -> list[tuple]:
    return [("tests.test_app", f"{stem}_{i}", "passed") for i in range(count)]


def scoped_token(suite, name="ci main") -> str:
    return token_create(suite=suite, scope="write", actor="@lea", name=name,
                        default_branch_only=True)[1]


def plain_token(suite) -> str:
    return token_create(suite=suite, scope="write", actor="@lea", name="ci")[1]


@pytest.fixture
def junit(board, suite):
    def post(token: str, xml: bytes, **query):
        return board.post(f"{API}/suites/{suite.slug}/junit", xml, token=token,
                          content_type=XML, query=query)

    return post


def main_run(junit, token, commit="c1", **query):
    """Every job of the default branch's run at ``commit`` uploads its JUnit."""
    answers = []
    for job, count in PROJECTS.items():
        xml = junit_xml(*cases(count, stem=f"test_{job.replace('.', '_')}"))
        answers.append(junit(token, xml, commit=commit, job=job, **query))
    return answers


# --- the rule ----------------------------------------------------------------------------

SIZING = [
    # credential, branch, guarded -> what the upload does to the test set
    (STATED, "main", False, Sizing.SIZES),
    (STATED, "main", True, Sizing.UNTRUSTED),
    (SCOPED, "main", True, Sizing.SIZES),
    (SCOPED, "main", False, Sizing.SIZES),
    (STATED, "feature/pad", False, Sizing.OTHER_BRANCH),
    (STATED, "feature/pad", True, Sizing.OTHER_BRANCH),
    (STATED, "", True, Sizing.OTHER_BRANCH),
    (STATED, "Main", False, Sizing.OTHER_BRANCH),
    (Credential.SIGNED_DEFAULT, "main", True, Sizing.SIZES),
    (Credential.SIGNED_OTHER, "main", True, Sizing.UNTRUSTED),  # a fork's branch "main"
    (Credential.SIGNED_OTHER, "feature/x", True, Sizing.OTHER_BRANCH),
]


@pytest.mark.parametrize(("credential", "branch", "guarded", "expected"), SIZING)
def test_which_uploads_size_the_test_set(credential, branch, guarded, expected):
    assert rules.upload_sizing(credential=credential, branch=branch, default_branch="main",
                               guarded=guarded) is expected
    assert rules.may_size_test_set(credential=credential, branch=branch,
                                   default_branch="main", guarded=guarded) is (
        expected is Sizing.SIZES)


def test_every_credential_and_sizing_is_in_the_table():
    assert {row[0] for row in SIZING} == set(Credential)
    assert {row[3] for row in SIZING} == set(Sizing)


BRANCHES = [
    # credential, stated -> the upload's branch (None: refused)
    (STATED, "feature/x", "feature/x"),
    (STATED, "", ""),
    (STATED, "main", "main"),
    (SCOPED, "main", "main"),
    (SCOPED, "", "main"),
    (SCOPED, "feature/x", None),
    (SCOPED, "Main", None),
]


@pytest.mark.parametrize(("credential", "stated", "expected"), BRANCHES)
def test_a_default_branch_token_uploads_for_the_default_branch_only(credential, stated,
                                                                    expected):
    assert rules.credential_branch(credential, stated=stated, default_branch="main") == expected


@given(credential=st.sampled_from(Credential), branch=st.text(max_size=8),
       default=st.text(min_size=1, max_size=8), guarded=st.booleans())
def test_an_unguarded_suite_trusts_the_stated_branch_and_no_other_branch_ever_sizes(
        credential, branch, default, guarded):
    sizes = rules.may_size_test_set(credential=credential, branch=branch,
                                    default_branch=default, guarded=guarded)
    if branch != default:
        assert not sizes
    elif not guarded or credential in rules.TRUSTED_CREDENTIALS:
        assert sizes
    else:
        assert not sizes


# --- tokens --------------------------------------------------------------------------------


def test_a_default_branch_token_is_a_write_token_created_and_audited_as_any(suite):
    token, raw = token_create(suite=suite, scope="write", actor="@lea", name="ci main",
                              default_branch_only=True)
    assert token.default_branch_only and token_authenticate(raw) == token
    event = AuditEvent.objects.get(suite=suite, action=AuditEvent.Action.TOKEN)
    assert event.after["default_branch_only"] is True and event.actor == "@lea"
    with pytest.raises(ValidationError) as refused:
        token_create(suite=suite, scope="read", actor="@lea", default_branch_only=True)
    assert "write token" in str(refused.value)
    assert ApiToken.objects.count() == 1


def test_the_settings_page_creates_and_lists_a_default_branch_token(client_for, suite, lead):
    client = client_for(lead)
    created = client.post(reverse("settings_token_create", args=[suite.slug]),
                          {"name": "ci main", "scope": "write", "default_branch_only": "on"})
    assert created.status_code == 302
    token = ApiToken.objects.get()
    assert token.default_branch_only
    page = client.get(reverse("settings", args=[suite.slug])).content.decode()
    assert "default branch only" in page


# --- the padding scenario --------------------------------------------------------------------


def test_a_plain_token_padding_main_leaves_a_guarded_test_set_alone(junit, suite, today):
    """The attack of the issue: two JUnit files of made-up tests, as branch=main, one per
    job, with the write token every job holds. The scoped token's run sized the test set
    at 101; the padding is stored and flagged, and the figure stays 101."""
    scoped, plain = scoped_token(suite), plain_token(suite)
    assert all(a.status == 201 for a in main_run(junit, scoped, branch="main"))
    assert share_figures(suite, today).size == 101
    for job in PROJECTS:
        padded = junit(plain, junit_xml(*cases(2000, stem=f"test_fake_{job}")),
                       commit="c2", branch="main", job=job)
        assert padded.status == 201
        assert padded.json["sizes_test_set"] is False
        assert padded.json["flags"] == [rules.TEST_SET_UNTRUSTED]
        assert "does not size the test set" in padded.json["summary"]
    figures = share_figures(suite, today)
    assert (figures.size, figures.run.commit) == (101, "c1")
    # Stored as evidence, all of it.
    padding = JUnitFile.objects.filter(commit="c2")
    assert [f.testcases for f in padding] == [2000, 2000]
    assert all(f.test_set_untrusted for f in padding)


def test_the_scoped_tokens_run_sizes_it_and_may_leave_out_the_branch(junit, suite, today):
    scoped = scoped_token(suite)
    answers = main_run(junit, scoped)  # no branch stated: the token's is the default
    assert [(a.status, a.json["branch"], a.json["sizes_test_set"], a.json["flags"])
            for a in answers] == [(201, "main", True, [])] * 2
    main_run(junit, scoped, commit="c2", branch="main")
    figures = share_figures(suite, today)
    assert (figures.size, figures.source, figures.run.commit) == (101, "ci_run", "c2")


def test_a_scoped_token_stating_another_branch_is_refused_naming_the_field(
        junit, board, suite):
    scoped = scoped_token(suite)
    refused = junit(scoped, junit_xml(*cases(5)), commit="c1", branch="feature/pad")
    assert refused.status == 422
    assert refused.json["details"][0]["field"] == "branch"
    assert "default branch only" in refused.json["message"]
    assert "main" in refused.json["message"]
    report = board.report(suite.slug, scoped, body([measurement("tests/test_a.py::t")]),
                          query={"commit": "c1", "branch": "feature/pad"})
    assert report.status == 422 and report.json["details"][0]["field"] == "branch"
    assert not JUnitFile.objects.exists()


def test_a_suite_without_a_scoped_token_keeps_todays_behaviour(junit, suite, today):
    plain = plain_token(suite)
    answers = main_run(junit, plain, branch="main")
    assert [(a.json["sizes_test_set"], a.json["flags"]) for a in answers] == [(True, [])] * 2
    assert share_figures(suite, today).size == 101


def test_revoking_the_scoped_token_hands_the_figure_back_to_stated_branches(
        junit, suite, today):
    scoped_token(suite)
    plain = plain_token(suite)
    main_run(junit, plain, branch="main")
    assert share_figures(suite, today).source == "known_nodes"
    token_revoke(token=ApiToken.objects.get(default_branch_only=True), actor="@lea")
    main_run(junit, plain, commit="c2", branch="main")
    assert share_figures(suite, today).size == 101


# --- what the pages say --------------------------------------------------------------------

RESTS = "rests on the branch its uploaders state"


def test_the_settings_page_says_what_an_unguarded_figure_rests_on(client_for, suite, lead):
    page = client_for(lead).get(reverse("settings", args=[suite.slug])).content.decode()
    assert page.count(RESTS) == 2  # the test set's section and the tokens'
    assert "docs/trusted-ci.md" in page and 'href="#tokens"' in page
    scoped_token(suite)
    page = client_for(lead).get(reverse("settings", args=[suite.slug])).content.decode()
    assert RESTS not in page
    assert "Only JUnit sent with a default-branch-only token, or by a" in page


def test_the_node_page_flags_an_untrusted_file(junit, client_for, suite, lead):
    scoped_token(suite)
    plain = plain_token(suite)
    junit(plain, junit_xml(*cases(3)), commit="c9", branch="main", job="pad")
    junit(plain, junit_xml(*cases(3)), commit="c9", branch="feature/x", job="pad")
    node = JUnitFile.objects.get(branch="main").results.first().node
    page = client_for(lead).get(reverse("node", args=[suite.slug, node.key])).content.decode()
    assert page.count(">test_set_untrusted</span>") == 1


def test_create_token_makes_a_default_branch_token(suite, capsys):
    call_command("create_token", suite.slug, "--scope", "write", "--default-branch-only")
    token = ApiToken.objects.get()
    assert token.default_branch_only and token_authenticate(capsys.readouterr().out.strip())
    with pytest.raises(CommandError, match="write token"):
        call_command("create_token", suite.slug, "--scope", "read", "--default-branch-only")



# --- a CI's signed claims --------------------------------------------------------------------

GITLAB = {"iss": "https://gitlab.example.com", "project_path": "acme/payments",
          "ref": "main", "ref_type": "branch", "ref_protected": "true", "sha": "ABC123",
          "pipeline_id": "77", "job_id": "901",
          "ci_config_ref_uri": "gitlab.example.com/acme/payments//.gitlab-ci.yml@refs/heads/main"}


def test_gitlab_claims_are_the_uploads_facts_and_only_a_protected_default_ref_is_trusted():
    facts = rules.signed_facts(rules.Issuer.GITLAB, GITLAB, default_ref="main")
    assert (facts.branch, facts.commit, facts.attempt, facts.run, facts.credential) == (
        "main", "ABC123", None, "pipeline 77 job 901", Credential.SIGNED_DEFAULT)
    unprotected = rules.signed_facts(rules.Issuer.GITLAB, {**GITLAB, "ref_protected": "false"},
                                     default_ref="main")
    assert unprotected.credential is Credential.SIGNED_OTHER
    assert rules.policy_problem(rules.Issuer.GITLAB, GITLAB, repository="acme/payments",
                                workflow=".gitlab-ci.yml") is None
    assert "ci_config_ref_uri" in rules.policy_problem(
        rules.Issuer.GITLAB, GITLAB, repository="acme/payments", workflow="other.yml")
    assert "project_path" in rules.policy_problem(
        rules.Issuer.GITLAB, GITLAB, repository="acme/other", workflow="")


def test_signed_values_win_and_disagreeing_stated_ones_name_the_claim():
    github = {"ref": "refs/heads/main", "sha": "abc123", "run_attempt": "2", "run_id": "9"}
    facts = rules.signed_facts(rules.Issuer.GITHUB, github, default_ref="refs/heads/main")
    assert (facts.branch, facts.attempt, facts.credential) == (
        "main", 2, Credential.SIGNED_DEFAULT)
    assert rules.signed_disagreements(facts, {"branch": "", "commit": "ABC123 ",
                                              "attempt": None}) == []
    assert rules.signed_disagreements(facts, {"branch": "dev", "commit": "abc124",
                                              "attempt": 1}) == [
        ("branch", "ref"), ("commit", "sha"), ("attempt", "run_attempt")]
    pull = rules.signed_facts(rules.Issuer.GITHUB, {**github, "ref": "refs/pull/3/merge",
                                                    "head_ref": "main"},
                              default_ref="refs/heads/main")
    assert pull.credential is Credential.SIGNED_OTHER
    assert rules.signed_branch(pull, "main") == "main"
    assert rules.upload_sizing(credential=pull.credential, branch="main",
                               default_branch="main", guarded=True) is Sizing.UNTRUSTED
