"""The CSP middleware builds each nonce-free policy once and answers exactly Django's
header; a changed setting, a nonce, a view's own policy or header go Django's way."""

from __future__ import annotations

from django.http import HttpResponse
from django.test import RequestFactory, override_settings
from django.utils.csp import CSP, build_policy

from web.csp import ContentSecurityPolicyMiddleware

ENFORCE, REPORT_ONLY = str(CSP.HEADER_ENFORCE), str(CSP.HEADER_REPORT_ONLY)


def answer(response=None, **request_attrs):
    middleware = ContentSecurityPolicyMiddleware(lambda request: response or HttpResponse())
    request = RequestFactory().get("/")
    for name, value in request_attrs.items():
        setattr(request, name, value)
    return middleware, middleware(request)


def test_the_header_is_djangos_own(settings):
    _, response = answer()
    assert response[ENFORCE] == build_policy(settings.SECURE_CSP)
    assert REPORT_ONLY not in response


def test_a_changed_setting_is_built_again():
    middleware, first = answer()
    policy = {"default-src": [CSP.NONE]}
    with override_settings(SECURE_CSP=policy, SECURE_CSP_REPORT_ONLY={"img-src": [CSP.SELF]}):
        response = middleware(RequestFactory().get("/"))
    assert response[ENFORCE] == "default-src 'none'" != first[ENFORCE]
    assert response[REPORT_ONLY] == "img-src 'self'"
    assert middleware(RequestFactory().get("/"))[ENFORCE] == first[ENFORCE]


def test_a_policy_with_a_nonce_gets_each_requests_nonce():
    policy = {"script-src": [CSP.SELF, CSP.NONCE]}
    with override_settings(SECURE_CSP=policy):
        middleware = ContentSecurityPolicyMiddleware(lambda request: HttpResponse(
            str(request._csp_nonce)))  # the page uses its nonce
        headers = set()
        for _ in range(2):
            response = middleware(RequestFactory().get("/"))
            assert f"'nonce-{response.content.decode()}'" in response[ENFORCE]
            headers.add(response[ENFORCE])
    assert len(headers) == 2


def test_a_views_own_policy_and_header_are_kept():
    own = HttpResponse()
    own._csp_config = {"default-src": [CSP.NONE]}
    assert answer(own)[1][ENFORCE] == "default-src 'none'"
    preset = HttpResponse()
    preset[ENFORCE] = "default-src 'self' example.org"
    assert answer(preset)[1][ENFORCE] == "default-src 'self' example.org"
