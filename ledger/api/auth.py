"""Bearer-token access to the API.

A token belongs to one suite and has the scope ``read`` or ``write``; a write token also
reads, so one token serves a whole CI job. No valid token is 401 (ninja asks
``SuiteToken``; a genuine but expired one says so, ``token_expired``); a valid token of the
wrong scope or of another suite is 403 (``suite_for_token``).
"""

from __future__ import annotations

import copy

from ninja.security import HttpBearer

from ledger.models import ApiToken, Suite
from ledger.oidc import CiIdentity, IssuerUnreachable, OidcRefused, ci_identity, looks_like_jwt
from ledger.tokens import TokenExpired, token_authenticate
from web.api.errors import ApiError

Scope = ApiToken.Scope
GRANTS = {Scope.READ: {Scope.READ}, Scope.WRITE: {Scope.READ, Scope.WRITE}}


class SuiteToken(HttpBearer):
    """Authorization: Bearer <token>, hashed at rest and compared in constant time."""

    def __call__(self, request) -> ApiToken | None:
        # As ninja's HttpBearer reads it, from the WSGI environ rather than request.headers
        # (which copies every header, on the path of every ledger GET).
        scheme, _, token = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() != self.openapi_scheme or not token:
            return None
        return self.authenticate(request, token)

    def authenticate(self, request, token: str) -> ApiToken | CiIdentity | None:
        token = token.strip()
        if looks_like_jwt(token):
            return _ci_identity(request, token)
        try:
            return token_authenticate(token)
        except TokenExpired as exc:
            raise expired(exc.token) from None


def _ci_identity(request, raw: str) -> CiIdentity | None:
    """A CI's OIDC token, verified for the suite the URL names (``ledger.oidc``): 401 with
    why when the suite does not trust it, 503 when its issuer's keys cannot be fetched.
    None before the URL is resolved (the ledger's fast path), so the API answers it."""
    match = getattr(request, "resolver_match", None)
    slug = match.kwargs.get("suite") if match is not None else None
    if slug is None:
        return None
    suite = Suite.objects.filter(slug=slug).first()
    try:
        if suite is None:
            raise OidcRefused(f"no suite is named {slug!r}")
        return ci_identity(raw, suite)
    except OidcRefused as exc:
        raise ApiError(
            401, "invalid_oidc_token", f"This CI token is refused: {exc}.",
            headers={"WWW-Authenticate": 'Bearer realm="flakeboard", error="invalid_token", '
                                         'error_description="The CI token is refused"'},
        ) from None
    except IssuerUnreachable as exc:
        raise ApiError(503, "issuer_unreachable",
                       f"The CI token's issuer could not be asked for its keys: {exc}; "
                       "try again.") from None


def expired(token: ApiToken) -> ApiError:
    """A genuine token past its expiry: 401, in the shape of every other refused token."""
    return ApiError(
        401, "token_expired",
        f"This token ({token.prefix}…) expired on {token.expires_at:%Y-%m-%d %H:%M} UTC; "
        "ask a lead of the suite for a new one.",
        headers={"WWW-Authenticate": 'Bearer realm="flakeboard", error="invalid_token", '
                                     'error_description="The token expired"'},
    )


def refusal(token: ApiToken | CiIdentity, slug: str, scope: str) -> ApiError | None:
    """Why ``token`` may not use ``scope`` on the suite ``slug`` (a 403), or None.

    A token of another suite is refused the same way whether or not ``slug`` exists.
    """
    if token.suite.slug != slug:
        return ApiError(
            403, "wrong_suite", f"This token belongs to another suite, not to “{slug}”."
        )
    if Scope(scope) not in GRANTS[Scope(token.scope)]:
        return ApiError(
            403, "wrong_scope",
            f"This needs a {scope} token; this one is a {token.scope} token.",
        )
    return None


def suite_for_token(request, slug: str, scope: str) -> Suite:
    """The token's suite when it is ``slug`` and the token grants ``scope``; else 403.

    A copy: the token's own models are shared between requests (``ledger.tokens``).
    """
    token: ApiToken = request.auth
    if (error := refusal(token, slug, scope)) is not None:
        raise error
    return copy.copy(token.suite)
