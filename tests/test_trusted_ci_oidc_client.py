"""The CI client with trusted CI (docs/trusted-ci.md): it asks GitHub Actions' id token
service for a token (the local issuer signs it) and sends it in place of a board token,
takes GitLab's from FLAKEBOARD_ID_TOKEN, says why it has none, and asks again near the
token's expiry."""

from __future__ import annotations

import json
import time
from http.server import ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

import pytest

from junit.models import JUnitFile
from ledger.selectors import share_figures
from tests.ci_client_view import load_client
from tests.junit_files import junit_xml
from tests.local_server import serving
from tests.oidc_issuer import REPOSITORY, SHA, Issuer, QuietHandler, answer_json


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
                answer_json(self, {"value": issuer.token(
                    aud=query["audience"], **service.claims)})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/token?api-version=2.0"

    def environment(self) -> dict:
        """A job's environment with ``permissions: id-token: write`` and no board token."""
        return {"FLAKEBOARD_TOKEN": "", "ACTIONS_ID_TOKEN_REQUEST_URL": self.url,
                "ACTIONS_ID_TOKEN_REQUEST_TOKEN": self.REQUEST_TOKEN,
                "GITHUB_REF_NAME": "main", "GITHUB_REF_TYPE": "branch"}


@pytest.fixture
def github_service(issuer):
    """The GitHub token service, serving the local issuer's tokens."""
    service = GitHubTokenService(issuer)
    with serving(service.server):
        yield service


@pytest.fixture
def github(github_service, trusted, live_server, settings):
    """The GitHub token service, for a board whose address is the live server's."""
    settings.BASE_URL = live_server.url
    return github_service


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


def test_the_clients_github_id_token_is_asked_for_again_near_its_expiry(github_service,
                                                                        settings):
    """The client's side alone: no board is called, its address is only the audience."""
    github, board = github_service, settings.BASE_URL
    client = load_client()
    fresh = client.GitHubIdToken(github.url, github.REQUEST_TOKEN, board, 5)
    assert fresh() == fresh()  # valid for 5 minutes: asked for once
    assert len(github.asked) == 1
    github.claims = {"exp": int(time.time()) + client.ID_TOKEN_RENEW // 2}
    ending = client.GitHubIdToken(github.url, github.REQUEST_TOKEN, board, 5)
    ending(), ending()  # within its renewal margin: asked for each time
    assert len(github.asked) == 3
