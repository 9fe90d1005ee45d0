"""A local OIDC issuer for the trusted-CI tests (docs/trusted-ci.md): an RSA key pair, its
configuration and JWKS served on 127.0.0.1, and tokens signed with it as GitHub Actions and
GitLab sign theirs; the ``issuer`` fixture serves one, and ``trusted`` makes the suite
trust its tokens of REPOSITORY's main.yml."""

from __future__ import annotations

import functools
import json
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from ledger.oidc import keys_forget
from ledger.trust import trust_policy_add
from tests.local_server import serving

REPOSITORY = "acme/payments"
SHA = "9f3c2a1b" * 5
MAIN = "refs/heads/main"


def answer_json(handler: BaseHTTPRequestHandler, answer: dict) -> None:
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
                answer_json(self, answer)

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
