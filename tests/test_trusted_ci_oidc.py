"""Trusted CI by OIDC (docs/trusted-ci.md), against a local issuer (tests/oidc_issuer.py):
an RSA key pair, its JWKS served on 127.0.0.1 by the test, and tokens signed with it as
GitHub Actions and GitLab sign theirs. A verified token uploads with no Flakeboard token;
its signed claims are the upload's branch, commit and attempt; only a token of the default
branch's ref sizes the test set; and a token that fails any check is refused with 401 and
why. The client's side: test_trusted_ci_oidc_client.py."""

from __future__ import annotations

import json
import time

import pytest
from django.urls import reverse

from flakeboard import rules
from junit.models import JUnitFile
from ledger.models import AuditEvent, TrustPolicy
from ledger.oidc import JWKS_REFETCH
from ledger.selectors import share_figures
from ledger.tokens import token_create
from ledger.trust import trust_policy_add
from runs.models import Report, VerdictBatch
from tests.api_http import API
from tests.helpers import body, measurement, record
from tests.junit_files import XML, junit_xml
from tests.oidc_issuer import MAIN, REPOSITORY, SHA


@pytest.fixture
def junit(board, suite):
    def post(token: str, xml: bytes, **query):
        return board.post(f"{API}/suites/{suite.slug}/junit", xml, token=token,
                          content_type=XML, query={"commit": SHA, **query})

    return post


def run_files(junit, token, **query):
    """The default branch's two jobs: 60 and 41 tests."""
    return [junit(token, junit_xml(*[("tests.test_app", f"test_{job}_{i}", "passed")
                                     for i in range(count)]), job=job, **query)
            for job, count in (("py312", 60), ("py313", 41))]


def test_a_default_branch_token_uploads_without_a_board_token_and_sizes_the_test_set(
        junit, trusted, suite, today):
    answers = run_files(junit, trusted())
    assert [a.status for a in answers] == [201, 201]
    assert [(a.json["branch"], a.json["sizes_test_set"], a.json["flags"]) for a in answers] == [
        ("main", True, [])] * 2
    assert share_figures(suite, today).size == 101
    assert JUnitFile.objects.first().uploaded_by == f"oidc {REPOSITORY} run 4242"


def test_a_pull_request_token_or_a_stated_main_does_not_size_it(
        junit, trusted, suite, today):
    pull = trusted(ref="refs/pull/7/merge", head_ref="main")  # a fork's branch named main
    answers = run_files(junit, pull)
    assert [a.status for a in answers] == [201, 201]
    assert [(a.json["sizes_test_set"], a.json["flags"]) for a in answers] == [
        (False, [rules.TEST_SET_UNTRUSTED])] * 2
    plain = token_create(suite=suite, scope="write", actor="@lea")[1]
    padded = run_files(junit, plain, branch="main")
    assert [(a.json["sizes_test_set"], a.json["flags"]) for a in padded] == [
        (False, [rules.TEST_SET_UNTRUSTED])] * 2
    assert share_figures(suite, today).source == "known_nodes"


def test_stated_values_that_disagree_with_the_claims_are_refused_naming_both(
        junit, board, trusted, suite):
    token = trusted()
    for field, value, claim in (("branch", "feature/x", "ref"), ("commit", "abc123", "sha"),
                                ("attempt", 3, "run_attempt")):
        refused = junit(token, junit_xml(("t", "test_a", "passed")), **{field: value})
        assert refused.status == 422, field
        assert refused.json["details"][0]["field"] == field
        assert f"{claim} claim" in refused.json["message"]
    report = board.report(suite.slug, token, body([measurement("tests/test_a.py::t")]),
                          query={"commit": SHA, "branch": "feature/x"})
    assert report.status == 422 and report.json["details"][0]["field"] == "branch"
    assert not JUnitFile.objects.exists()
    agreeing = junit(token, junit_xml(("t", "test_a", "passed")), branch="main",
                     commit=SHA.upper())
    assert agreeing.status == 201


def test_the_attempt_comes_from_run_attempt(junit, trusted):
    xml = junit_xml(("t", "test_a", "passed"))
    first = junit(trusted(), xml, job="py312")
    again = junit(trusted(run_attempt="2"), xml, job="py312")  # a re-run, the same body
    assert (first.status, first.json["attempt"]) == (201, 1)
    assert (again.status, again.json["attempt"], again.json["duplicate"]) == (201, 2, False)
    assert JUnitFile.objects.count() == 2



def test_a_verdict_batch_re_run_is_a_new_attempt_and_its_commit_is_the_signed_one(
        board, trusted, suite):
    batch = body({"patch": "p1", "commit": SHA, "records": [record("tests/test_a.py::t")]})
    first = board.verdicts(suite.slug, trusted(), batch)
    again = board.verdicts(suite.slug, trusted(), batch)  # the same run sends it again
    rerun = board.verdicts(suite.slug, trusted(run_attempt="2"), batch)  # CI re-runs the job
    assert (first.status, first.json["attempt"]) == (201, 1)
    assert (again.status, again.json["duplicate"], again.json["repeats_attempt"]) == (
        200, True, 1)
    assert (rerun.status, rerun.json["attempt"], rerun.json["duplicate"]) == (201, 2, False)
    bare = board.verdicts(suite.slug, trusted(), body([record("tests/test_a.py::t")]),
                          query={"patch": "p2"})
    assert bare.status == 201  # its commit left out: the signed sha
    assert VerdictBatch.objects.get(pk=bare.json["id"]).commit == SHA
    for refused in (
            board.verdicts(suite.slug, trusted(), body({**json.loads(batch), "commit": "abc123"})),
            board.verdicts(suite.slug, trusted(), body([record("tests/test_a.py::t")]),
                           query={"patch": "p1", "commit": "abc123"})):
        assert refused.status == 422, refused.json
        assert refused.json["details"][0]["field"] == "commit"
        assert "sha claim" in refused.json["message"]


def test_a_flake_report_re_run_is_a_new_attempt_not_a_replay(board, trusted, suite):
    report = body([measurement("tests/test_a.py::t")])
    first = board.report(suite.slug, trusted(), report)
    rerun = board.report(suite.slug, trusted(run_attempt="2"), report)
    assert (first.status, first.json["attempt"]) == (201, 1)
    assert Report.objects.get(pk=first.json["id"]).commit == SHA
    assert (rerun.status, rerun.json["attempt"], rerun.json["duplicate"]) == (201, 2, False)



def test_a_retried_gitlab_job_is_a_new_upload_even_with_the_same_body(
        junit, suite, issuer, settings):
    trust_policy_add(suite=suite, actor="@lea", kind="gitlab", issuer=issuer.url,
                     repository=REPOSITORY)

    def gitlab(job_id: str) -> str:
        return issuer.token(aud=settings.BASE_URL, project_path=REPOSITORY, ref="main",
                            ref_protected="true", pipeline_id="77", job_id=job_id)

    xml = junit_xml(("t", "test_a", "passed"))
    first, again, retried = (junit(gitlab(job), xml, job="py312") for job in ("1", "1", "2"))
    assert (first.status, first.json["branch"], first.json["sizes_test_set"]) == (
        201, "main", True)
    assert (again.status, again.json["duplicate"]) == (200, True)
    assert (retried.status, retried.json["duplicate"]) == (201, False)
    assert JUnitFile.objects.count() == 2


REFUSED = {
    "expired": (lambda t, i, s: t(exp=int(time.time()) - 3600), "expired"),
    "wrong audience": (lambda t, i, s: i.token(aud="https://elsewhere.example"), "audience"),
    "wrong issuer": (lambda t, i, s: t(iss="https://issuer.example"), "issuer"),
    "wrong signature": (lambda t, i, s: t()[:-8] + ("A" * 8 if t()[-8:] != "A" * 8
                                                    else "B" * 8), "signature"),
    "none algorithm": (lambda t, i, s: i.token(aud=s.BASE_URL, algorithm="none"), "'none'"),
    "unknown kid": (lambda t, i, s: (i.new_key("k9", publish=False), t(kid="k9"))[1],
                    "does not publish"),
    "another repository": (lambda t, i, s: t(repository="evil/payments"), "repository"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_token_that_fails_a_check_is_refused_with_401_and_why(
        case, junit, trusted, issuer, settings):
    make, says = REFUSED[case]
    answer = junit(make(trusted, issuer, settings), junit_xml(("t", "test_a", "passed")))
    assert answer.status == 401, answer.json
    assert answer.json["error"] == "invalid_oidc_token"
    assert says in answer.json["message"]
    assert not JUnitFile.objects.exists()


def test_a_key_rotation_is_picked_up_within_the_cache_lifetime(junit, trusted, issuer, clock):
    xml = junit_xml(("t", "test_a", "passed"))
    assert junit(trusted(), xml, job="a").status == 201
    assert issuer.fetches == 1
    assert junit(trusted(), xml, job="b").status == 201
    assert issuer.fetches == 1  # cached
    issuer.new_key("k2")
    issuer.published = ["k2"]  # the issuer rotates: k1 is gone
    clock.shift(JWKS_REFETCH.total_seconds())
    assert junit(trusted(kid="k2"), xml, job="c").status == 201
    assert issuer.fetches == 2


def test_a_lead_adds_and_removes_a_policy_on_the_settings_page(client_for, suite, lead):
    client = client_for(lead)
    added = client.post(reverse("settings_trust_policy_add", args=[suite.slug]),
                        {"kind": "github", "repository": REPOSITORY, "workflow": ""})
    assert added.status_code == 302
    policy = TrustPolicy.objects.get()
    assert (policy.issuer, policy.default_ref) == (rules.GITHUB_ISSUER, MAIN)
    page = client.get(reverse("settings", args=[suite.slug])).content.decode()
    assert REPOSITORY in page and "rests on the branch its uploaders state" not in page
    client.post(reverse("settings_trust_policy_remove", args=[suite.slug, policy.pk]))
    assert not TrustPolicy.objects.exists()
    events = AuditEvent.objects.filter(suite=suite).order_by("at", "pk")
    assert [(e.actor, e.note) for e in events] == [
        ("@lea", "trusted CI added"), ("@lea", "trusted CI removed")]


def test_padding_main_with_a_write_token_leaves_a_trusted_suites_test_set_at_101(
        junit, trusted, suite, today):
    run_files(junit, trusted())
    plain = token_create(suite=suite, scope="write", actor="@lea")[1]
    for job in ("py3.12", "py3.13"):
        padded = junit(plain, junit_xml(*[("tests.test_pad", f"test_fake_{job}_{i}", "passed")
                                          for i in range(2000)]),
                       commit="c2", branch="main", job=job)
        assert (padded.status, padded.json["flags"]) == (201, [rules.TEST_SET_UNTRUSTED])
    figures = share_figures(suite, today)
    assert (figures.size, figures.run.commit) == (101, SHA)
