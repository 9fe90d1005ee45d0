"""Trusted CI by OIDC (docs/trusted-ci.md), against a local issuer: an RSA key pair, its
JWKS served on 127.0.0.1 by the test, and tokens signed with it as GitHub Actions and
GitLab sign theirs. A verified token uploads with no Flakeboard token; its signed claims
are the upload's branch, commit and attempt; only a token of the default branch's ref
sizes the test set; and a token that fails any check is refused with 401 and why."""

from __future__ import annotations

import functools
import json
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from django.urls import reverse

from flakeboard import rules
from junit.models import JUnitFile
from ledger.models import AuditEvent, TrustPolicy
from ledger.oidc import JWKS_REFETCH, keys_forget
from ledger.selectors import share_figures
from ledger.tokens import token_create
from ledger.trust import trust_policy_add
from runs.models import Report, VerdictBatch
from tests.api_http import API
from tests.ci_client_view import load_client
from tests.helpers import body, measurement, record
from tests.junit_files import XML, junit_xml
from tests.local_server import serving

REPOSITORY = "acme/payments"
SHA = "9f3c2a1b" * 5
MAIN = "refs/heads/main"


def _answer_json(handler: BaseHTTPRequestHandler, answer: dict) -> None:
    """200 with ``answer`` as JSON, from a test server's handler."""
    data = json.dumps(answer).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


@functools.cache
def signing_key(kid: str) -> rsa.RSAPrivateKey:
    """The issuer's RSA key of that id: one per id in the worker, since making a key takes
    a tenth of a second and no test needs two by one id."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class QuietHandler(BaseHTTPRequestHandler):
    """A test server's handler that logs nothing."""

    def log_message(self, *args):
        pass


class Issuer:
    """An OIDC issuer on 127.0.0.1: its configuration and JWKS, and a key to sign with."""

    def __init__(self):
        self.keys: dict[str, rsa.RSAPrivateKey] = {}
        self.published: list[str] = []
        self.fetches = 0
        issuer = self

        class Handler(QuietHandler):
            def do_GET(self):
                if self.path == "/.well-known/openid-configuration":
                    answer = {"issuer": issuer.url, "jwks_uri": issuer.url + "/jwks"}
                elif self.path == "/jwks":
                    issuer.fetches += 1
                    answer = {"keys": [issuer.jwk(kid) for kid in issuer.published]}
                else:
                    self.send_error(404)
                    return
                _answer_json(self, answer)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def new_key(self, kid: str, *, publish: bool = True) -> str:
        self.keys[kid] = signing_key(kid)
        if publish:
            self.published.append(kid)
        return kid

    def jwk(self, kid: str) -> dict:
        found = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.keys[kid].public_key()))
        return {**found, "kid": kid, "use": "sig", "alg": "RS256"}

    def token(self, kid: str = "k1", *, headers=None, algorithm="RS256", **claims) -> str:
        now = int(time.time())
        payload = {"iss": self.url, "aud": claims.pop("aud", None), "iat": now,
                   "nbf": now, "exp": now + 300, "repository": REPOSITORY, "ref": MAIN,
                   "sha": SHA, "run_id": "4242", "run_attempt": "1",
                   "workflow_ref": f"{REPOSITORY}/.github/workflows/main.yml@{MAIN}",
                   **claims}
        key = None if algorithm == "none" else self.keys[kid]
        return jwt.encode(payload, key, algorithm=algorithm,
                          headers={"kid": kid, **(headers or {})})


@pytest.fixture
def issuer(settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_IPS = True  # the issuer listens on 127.0.0.1
    keys_forget()
    found = Issuer()
    found.new_key("k1")
    with serving(found.server):
        yield found
    keys_forget()


@pytest.fixture
def trusted(suite, issuer, settings):
    """The suite trusts the local issuer's tokens of REPOSITORY, main.yml."""
    trust_policy_add(suite=suite, actor="@lea", kind="custom", issuer=issuer.url,
                     repository=REPOSITORY, workflow=".github/workflows/main.yml")
    return lambda **claims: issuer.token(aud=settings.BASE_URL, **claims)


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


class GitHubTokenService:
    """GitHub Actions' id token service, on 127.0.0.1: it answers a job's request (its
    request token as the bearer, the audience in the query) with a token the local
    issuer signed for that audience, as the job's run and attempt."""

    REQUEST_TOKEN = "ghs_request-token"

    def __init__(self, issuer: Issuer):
        self.asked: list[dict] = []
        self.claims = {"run_attempt": "1"}
        service = self

        class Handler(QuietHandler):
            def do_GET(self):
                query = dict(parse_qsl(urlsplit(self.path).query))
                service.asked.append({"authorization": self.headers["Authorization"], **query})
                if self.headers["Authorization"] != f"bearer {service.REQUEST_TOKEN}":
                    self.send_error(403)
                    return
                _answer_json(self, {"value": issuer.token(
                    aud=query["audience"], **service.claims)})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/token?api-version=2.0"

    def environment(self) -> dict:
        """A job's environment with ``permissions: id-token: write`` and no board token."""
        return {"FLAKEBOARD_TOKEN": "", "ACTIONS_ID_TOKEN_REQUEST_URL": self.url,
                "ACTIONS_ID_TOKEN_REQUEST_TOKEN": self.REQUEST_TOKEN,
                "GITHUB_REF_NAME": "main", "GITHUB_REF_TYPE": "branch"}


@pytest.fixture
def github(issuer, trusted, live_server, settings):
    """The GitHub token service, for a board whose address is the live server's."""
    settings.BASE_URL = live_server.url
    service = GitHubTokenService(issuer)
    with serving(service.server):
        yield service


@pytest.mark.slow
def test_the_client_asks_github_for_an_id_token_and_sends_it_in_place_of_a_token(
        run, github, suite, live_server, tmp_path, today):
    (tmp_path / "junit.xml").write_bytes(junit_xml(*[("t", f"test_{i}", "passed")
                                                     for i in range(3)]))
    upload = ("junit", "junit.xml", "--commit", SHA, "--job", "py312", "--format", "json")
    done = run(*upload, FLAKEBOARD_SUITE=suite.slug, **github.environment())
    assert done.returncode == 0, done.stderr
    assert github.asked == [{"authorization": f"bearer {github.REQUEST_TOKEN}",
                             "api-version": "2.0", "audience": live_server.url}]
    [answer] = json.loads(done.stdout)
    assert (answer["branch"], answer["attempt"], answer["sizes_test_set"]) == ("main", 1, True)
    assert JUnitFile.objects.get().uploaded_by == f"oidc {REPOSITORY} run 4242"
    assert share_figures(suite, today).size == 3
    github.claims = {"run_attempt": "2"}  # CI re-runs the job: the same file again
    rerun = run(*upload, FLAKEBOARD_SUITE=suite.slug, **github.environment())
    assert rerun.returncode == 0, rerun.stderr
    assert [(a["attempt"], a["duplicate"]) for a in json.loads(rerun.stdout)] == [(2, False)]


@pytest.mark.slow
def test_gitlabs_id_token_wins_over_a_board_token(run, issuer, trusted, suite, live_server,
                                                 settings, tmp_path):
    settings.BASE_URL = live_server.url
    (tmp_path / "junit.xml").write_bytes(junit_xml(("t", "test_a", "passed")))
    done = run("junit", "junit.xml", "--commit", SHA, "--format", "json",
               FLAKEBOARD_SUITE=suite.slug, FLAKEBOARD_ID_TOKEN=trusted(),
               CI_COMMIT_BRANCH="main")  # FLAKEBOARD_TOKEN: a plain write token, as well
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["sizes_test_set"] is True
    assert JUnitFile.objects.get().uploaded_by.startswith("oidc ")


@pytest.mark.slow
def test_the_client_with_an_id_token_needs_the_suite_and_says_why_github_gave_none(
        run, github, suite, tmp_path):
    (tmp_path / "junit.xml").write_bytes(junit_xml(("t", "test_a", "passed")))
    upload = ("junit", "junit.xml", "--commit", SHA)
    no_suite = run(*upload, **github.environment())
    assert (no_suite.returncode, github.asked) == (64, [])
    assert "set FLAKEBOARD_SUITE" in no_suite.stderr
    refused = run(*upload, FLAKEBOARD_SUITE=suite.slug,
                  **{**github.environment(), "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "wrong"})
    assert refused.returncode == 3
    assert "GitHub Actions gave no id token" in refused.stderr
    assert not JUnitFile.objects.exists()


def test_the_clients_github_id_token_is_asked_for_again_near_its_expiry(github, live_server):
    client = load_client()
    fresh = client.GitHubIdToken(github.url, github.REQUEST_TOKEN, live_server.url, 5)
    assert fresh() == fresh()  # valid for 5 minutes: asked for once
    assert len(github.asked) == 1
    github.claims = {"exp": int(time.time()) + client.ID_TOKEN_RENEW // 2}
    ending = client.GitHubIdToken(github.url, github.REQUEST_TOKEN, live_server.url, 5)
    ending(), ending()  # within its renewal margin: asked for each time
    assert len(github.asked) == 3
