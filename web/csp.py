"""The Content-Security-Policy headers, each built once.

Django's middleware builds the header from the settings on every response. A policy
without a nonce is the same string on every response, so it is built once per setting (and
again whenever the setting is replaced, as tests do); a policy with a nonce, and a view's
own policy, go to Django's middleware unchanged, which also leaves any header a view set.
"""

from __future__ import annotations

from django.conf import settings
from django.middleware import csp
from django.utils.csp import CSP, build_policy

# Each header, its setting, and the attribute by which a view overrides it (Django's own).
HEADERS = (
    (CSP.HEADER_ENFORCE, "SECURE_CSP", "_csp_config"),
    (CSP.HEADER_REPORT_ONLY, "SECURE_CSP_REPORT_ONLY", "_csp_ro_config"),
)


def _has_nonce(config) -> bool:
    return any(
        value is CSP.NONCE or (isinstance(value, list | tuple | set) and CSP.NONCE in value)
        for value in config.values()
    )


class ContentSecurityPolicyMiddleware(csp.ContentSecurityPolicyMiddleware):
    def __init__(self, get_response):
        super().__init__(get_response)
        self.built: dict[str, tuple[object, str | None]] = {}  # setting -> (config, header)

    def policy(self, name: str) -> str | None:
        """The header for the setting ``name``: None when it has a nonce or is empty."""
        config = getattr(settings, name)
        known = self.built.get(name)
        if known is None or known[0] is not config:
            plain = bool(config) and not _has_nonce(config)
            known = self.built[name] = (config, build_policy(config) if plain else None)
        return known[1]

    def process_response(self, request, response):
        for header, name, override in HEADERS:
            if (
                header not in response and not hasattr(response, override)
                and (policy := self.policy(name)) is not None
            ):
                response.headers[str(header)] = policy
        return super().process_response(request, response)
