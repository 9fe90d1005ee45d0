"""A CI's OIDC token in place of a board token (docs/trusted-ci.md), as PyPI's trusted
publishing takes one: a GitHub Actions or GitLab CI job presents a short-lived token its CI
signed, and the board checks it against the suite's trust policies.

The token is verified with PyJWT against the issuer's keys (its JWKS, found through its
OpenID configuration and fetched through the board's outbound guard, ``web.outbound``),
only RS256, with ``iss``, ``aud`` (the board's BASE_URL), ``exp`` and ``nbf`` checked with
LEEWAY; then a policy of the suite must name its issuer and match its repository and
workflow (``rules.policy_problem``). The keys are kept JWKS_LIFETIME; a token signed with
a key not among them fetches them again, at most once a JWKS_REFETCH, so an issuer's key
rotation is picked up well within the lifetime, and a flood of made-up key ids costs the
issuer one request a JWKS_REFETCH.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta

import jwt
from django.conf import settings
from django.utils import timezone

from flakeboard import rules
from web import outbound

from .models import Suite, TrustPolicy

ALGORITHMS = ["RS256"]  # what GitHub Actions and GitLab sign their id tokens with
LEEWAY = timedelta(seconds=60)
JWKS_LIFETIME = timedelta(minutes=10)
JWKS_REFETCH = timedelta(seconds=60)
JWKS_MAX_BYTES = 256 * 1024
USER_AGENT = "Flakeboard-OIDC/1"


class OidcRefused(Exception):
    """The token is not one the suite trusts: why, in a sentence (401)."""


class IssuerUnreachable(Exception):
    """The issuer's keys could not be fetched (503: CI may try again)."""


@dataclass(frozen=True)
class CiIdentity:
    """A verified OIDC token: the API's ``request.auth`` in place of an ApiToken. It
    uploads to its suite (a write scope), and its claims are the upload's facts."""

    suite: Suite
    policy: TrustPolicy
    facts: rules.SignedFacts
    scope: str = "write"
    prefix: str = "oidc"

    @property
    def label(self) -> str:
        return f"oidc {self.policy.repository} {self.facts.run}"[:200]


def looks_like_jwt(raw: str) -> bool:
    """Three base64url segments: a JWT, never a board token (``fbr_``/``fbw_``, no dots)."""
    parts = raw.split(".")
    return len(parts) == 3 and all(parts[:2]) and not raw.startswith(("fbr_", "fbw_"))


_lock = threading.Lock()
# issuer -> (when fetched, its keys by kid)
_keys: dict[str, tuple[datetime, dict[str, jwt.PyJWK]]] = {}


def keys_forget() -> None:
    """Forget every issuer's keys (the tests' issuers come and go)."""
    with _lock:
        _keys.clear()


def _json(url: str) -> dict:
    try:
        status, body = outbound.get(url, max_bytes=JWKS_MAX_BYTES, user_agent=USER_AGENT)
    except (outbound.Refused, OSError) as exc:
        raise IssuerUnreachable(f"{url}: {exc}") from None
    if status != 200:
        raise IssuerUnreachable(f"{url} answered {status}")
    try:
        found = json.loads(body)
    except ValueError:
        raise IssuerUnreachable(f"{url} did not answer JSON") from None
    if not isinstance(found, dict):
        raise IssuerUnreachable(f"{url} did not answer a JSON object")
    return found


def _fetch(issuer: str) -> dict[str, jwt.PyJWK]:
    configuration = _json(issuer.rstrip("/") + "/.well-known/openid-configuration")
    jwks_uri = configuration.get("jwks_uri")
    if not isinstance(jwks_uri, str):
        raise IssuerUnreachable(f"{issuer}'s OpenID configuration names no jwks_uri")
    try:
        keyset = jwt.PyJWKSet.from_dict(_json(jwks_uri))
    except jwt.PyJWTError as exc:
        raise IssuerUnreachable(f"{jwks_uri} holds no usable key: {exc}") from None
    return {key.key_id: key for key in keyset.keys if key.key_id}


def _key(issuer: str, kid: str, now: datetime) -> jwt.PyJWK:
    with _lock:
        fetched, keys = _keys.get(issuer, (None, {}))
        stale = fetched is None or now - fetched >= JWKS_LIFETIME
        if stale or (kid not in keys and now - fetched >= JWKS_REFETCH):
            fetched, keys = now, _fetch(issuer)
            _keys[issuer] = (fetched, keys)
        if kid not in keys:
            raise OidcRefused(f"it is signed with a key ({kid!r}) that {issuer} does not "
                              "publish")
        return keys[kid]


def _claims(raw: str, key: jwt.PyJWK, issuer: str) -> dict:
    try:
        return jwt.decode(raw, key=key, algorithms=ALGORITHMS, audience=settings.BASE_URL,
                          issuer=issuer, leeway=LEEWAY,
                          options={"require": ["exp", "iss", "aud"]})
    except jwt.ExpiredSignatureError:
        raise OidcRefused("it has expired (exp)") from None
    except jwt.ImmatureSignatureError:
        raise OidcRefused("it is not valid yet (nbf)") from None
    except jwt.InvalidAudienceError:
        raise OidcRefused(f"its audience (aud) is not this board, {settings.BASE_URL}: "
                          "request the token for that audience") from None
    except jwt.InvalidSignatureError:
        raise OidcRefused(f"its signature does not verify with {issuer}'s key") from None
    except jwt.PyJWTError as exc:
        raise OidcRefused(f"it is not valid: {exc}") from None


def ci_identity(raw: str, suite: Suite) -> CiIdentity:
    """The verified identity of ``raw`` for ``suite``; OidcRefused, or IssuerUnreachable."""
    try:
        header = jwt.get_unverified_header(raw)
        unverified = jwt.decode(raw, options={"verify_signature": False})
    except jwt.PyJWTError:
        raise OidcRefused("it is not a JWT") from None
    if header.get("alg") not in ALGORITHMS:
        raise OidcRefused(f"it is signed with {header.get('alg')!r}; only "
                          f"{', '.join(ALGORITHMS)} is accepted")
    issuer = unverified.get("iss")
    policies = [p for p in suite.trust_policies.all() if p.issuer == issuer]
    if not policies:
        raise OidcRefused(f"no trust policy of {suite.slug} names its issuer (iss) "
                          f"{issuer!r}")
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise OidcRefused("its header names no key (kid)")
    claims = _claims(raw, _key(issuer, kid, timezone.now()), issuer)
    problems = []
    for policy in policies:
        kind = rules.Issuer(policy.kind)
        problem = rules.policy_problem(kind, claims, repository=policy.repository,
                                       workflow=policy.workflow)
        if problem is None:
            facts = rules.signed_facts(kind, claims, default_ref=policy.default_ref)
            return CiIdentity(suite=suite, policy=policy, facts=facts)
        problems.append(problem)
    raise OidcRefused("no trust policy matches it: " + "; ".join(problems))
