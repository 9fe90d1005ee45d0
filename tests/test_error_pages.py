"""The error pages (issue 21, Edges): 400, 403, 404 and 500 in the board's layout, saying
what to do next; a 404 under /suites/ lists the suites the user can open; under /api/ the
same errors answer the API's JSON error shape. Tests run with DEBUG off, as a deployment
does, so these are the pages users see."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from board import error_pages


def test_an_owner_opening_settings_gets_a_403_in_the_layout(client_for, owner, suite):
    response = client_for(owner).get(reverse("settings", args=[suite.slug]))
    html = response.content.decode()
    assert response.status_code == 403
    assert '<h1 id="error-heading">Not allowed</h1>' in html
    assert "This needs the lead role in acme." in html
    assert 'class="topbar"' in html and "@finley" in html
    assert f'<a href="/suites/{suite.slug}/">Back to the suite' in html


def test_an_unknown_suite_lists_the_suites_the_user_can_open(client_for, owner, suite,
                                                             other_suite):
    response = client_for(owner).get("/suites/nope/")
    html = response.content.decode()
    assert response.status_code == 404
    assert "<h2>Your suites</h2>" in html
    assert reverse("overview", args=[suite.slug]) in html
    assert reverse("overview", args=[other_suite.slug]) not in html  # not a member


def test_a_stray_address_is_a_404_without_the_url_patterns(client_for, owner):
    response = client_for(owner).get("/no/such/page/")
    html = response.content.decode()
    assert response.status_code == 404
    assert "Not found" in html and "Your suites" not in html
    assert "urlpatterns" not in html.lower() and "suites/&lt;slug" not in html


def test_an_unknown_api_address_answers_the_json_error_shape(client):
    response = client.get("/api/v1/nothing-here")
    assert response.status_code == 404
    assert response.json() == {"error": "not_found", "message": response.json()["message"],
                               "details": []}


def test_the_500_page_needs_neither_the_database_nor_the_user(rf):
    # No database access is allowed in this test: a query would raise.
    response = error_pages.server_error(rf.get("/suites/acme/"))
    html = response.content.decode()
    assert response.status_code == 500
    assert "Server error" in html and "Sign in" in html


@pytest.mark.urls("tests.failing_urls")
def test_an_exception_in_a_view_gives_the_500_page():
    client = Client(raise_request_exception=False)
    response = client.get("/boom/")
    assert response.status_code == 500
    assert "The board failed to answer this request." in response.content.decode()


def test_the_400_page(rf):
    response = error_pages.bad_request(rf.get("/"))
    assert response.status_code == 400
    assert "could not read this request" in response.content.decode()


def test_every_page_has_the_icon(client):
    html = client.get(reverse("login")).content.decode()
    assert 'rel="icon" href="/static/favicon.svg"' in html
