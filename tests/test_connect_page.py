"""The Connect CI page (issue 21): the board's own address in the recipe, a write token a
lead creates in one click, the API docs and the client linked, and the last upload seen
from CI as proof that the wiring works."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from junit.ingest import junit_ingest
from ledger.models import ApiToken
from runs.ingest import report_ingest, signals_ingest
from tests.helpers import body, measurement, record
from tests.junit_files import junit_xml


def test_the_recipe_holds_this_boards_address_and_links_the_docs_and_client(
        client_for, owner, suite):
    html = client_for(owner).get(reverse("connect", args=[suite.slug])).content.decode()
    assert "FLAKEBOARD_URL=http://testserver\n" in html
    assert "FLAKEBOARD_SUITE=acme" in html
    assert 'href="http://testserver/ci/flakeboard_ci.py"' in html
    assert 'href="http://testserver/api/v1/docs"' in html
    assert 'href="http://testserver/api/v1/openapi.json"' in html
    # An owner cannot create tokens: the page says who can.
    assert "A lead of the suite creates tokens" in html and "Create a write token" not in html
    assert "Nothing yet: once a CI job uploads" in html
    # Beside the token, the CI's own id token (docs/trusted-ci.md): a job for each CI, its
    # audience the board's BASE_URL, which the board checks it against.
    assert "id-token: write" in html and "FLAKEBOARD_ID_TOKEN:" in html
    assert f"aud: {settings.BASE_URL}\n" in html
    assert "This suite trusts no CI yet" in html


def test_a_lead_creates_a_write_token_from_the_page(client_for, lead, suite):
    client = client_for(lead)
    html = client.get(reverse("connect", args=[suite.slug])).content.decode()
    assert "This suite has 0 active write tokens." in html
    action = reverse("settings_token_create", args=[suite.slug])
    assert f'action="{action}#tokens"' in html
    shown = client.post(action, {"scope": "write", "name": "ci"}, follow=True).content.decode()
    token = ApiToken.objects.get(suite=suite)
    assert (token.scope, token.name) == ("write", "ci")
    assert "Copy the new write token" in shown
    html = client.get(reverse("connect", args=[suite.slug])).content.decode()
    assert "This suite has 1 active write token." in html


def test_the_last_upload_of_each_kind_is_shown_newest_first(client_for, owner, suite):
    now = timezone.now()
    report_ingest(suite=suite, body=body([measurement("tests/test_a.py::test_a")]),
                  actor="token fbw_ab12 (ci)", now=now - timedelta(hours=3))
    signals_ingest(suite=suite, body=body([record("tests/test_a.py::test_a")]),
                   actor="token fbw_ab12 (ci)", now=now - timedelta(hours=1))
    junit_ingest(suite=suite, body=junit_xml(("tests.test_a", "test_a", "passed")),
                 actor="token fbw_ab12 (ci)", query={"commit": "c0ffee"},
                 now=now - timedelta(hours=2))
    html = client_for(owner).get(reverse("connect", args=[suite.slug])).content.decode()
    batch, junit, report = (html.index("Verdict batch #"), html.index("JUnit file"),
                            html.index("Flake report #"))
    assert batch < junit < report
    assert "by token fbw_ab12 (ci)" in html and "c0ffee" in html
