"""The status badge: the gate's status now drawn as SVG, public only when the suite's lead
allows it. Its access by caller is in the pages' table (test_access_pages.py)."""

from __future__ import annotations

from datetime import timedelta
from xml.etree import ElementTree

import pytest
from django.urls import reverse

from flakeboard import rules
from ledger.badge import status_badge, text_width
from ledger.models import AuditEvent
from ledger.quarantine import quarantine_create
from ledger.settings_services import badge_visibility_set

SVG = "{http://www.w3.org/2000/svg}"
FLAKY = "tests/test_flaky.py::test_retry"


def drawn(response) -> dict:
    """The badge as a reader sees it: its title, its two texts and its message's colour."""
    root = ElementTree.fromstring(response.content)  # noqa: S314 (the board's own SVG)
    texts = [t.text for t in root.iter(f"{SVG}text")]
    fills = [r.get("fill") for r in root.iter(f"{SVG}rect")]
    return {"title": root.find(f"{SVG}title").text, "texts": texts, "colour": fills[-1],
            "width": int(root.get("width"))}


def badge_of(client, suite):
    return client.get(reverse("badge", args=[suite.slug]))


def test_a_private_badge_is_for_members_only(client_for, suite, viewer):
    assert badge_of(client_for(None), suite).status_code == 404
    response = badge_of(client_for(viewer), suite)
    assert response.status_code == 200
    assert response["Content-Type"] == "image/svg+xml; charset=utf-8"
    assert response["Cache-Control"] == "private, no-cache"
    assert drawn(response)["texts"] == ["flake gate", "passing"]


def test_a_public_badge_is_for_anyone_and_says_what_the_endpoint_says(client_for, suite, today):
    badge_visibility_set(suite=suite, actor="@lea", public=True)
    response = badge_of(client_for(None), suite)
    assert response.status_code == 200
    assert response["Cache-Control"] == "public, max-age=60"
    assert drawn(response) == {"title": "flake gate: passing", "texts": ["flake gate", "passing"],
                               "colour": "#2e7d32", "width": drawn(response)["width"]}
    quarantine_create(suite=suite, nodeid=FLAKY, owner="@finley",
                      expires=today - timedelta(days=1), evidence="ci/run-3", actor="@finley",
                      today=today, imported=True, n=200, fails=5)
    failing = drawn(badge_of(client_for(None), suite))
    assert failing["texts"] == ["flake gate", "failing: 1 expired"]
    assert failing["colour"] == "#c62828"
    assert failing["title"] == "flake gate: failing: 1 expired entry"


def test_an_unknown_suite_has_no_badge(client, db):
    assert client.get(reverse("badge", args=["no-such-suite"])).status_code == 404


@pytest.mark.parametrize(
    ("expired", "violations", "message"),
    [(0, 0, "passing"), (2, 0, "failing: 2 expired"), (0, 1, "failing: 1 tier violation"),
     (1, 3, "failing: 1 expired, …")],
)
def test_the_message_counts_the_first_cause(expired, violations, message):
    now = rules.GateStatusNow(expired, violations, rules.ShareFigures(0, 10, 0.05))
    badge = status_badge(now)
    assert badge.message == message
    assert badge.width == text_width("flake gate") + text_width(message) + 24
    assert badge.title == f"flake gate: {rules.status_summary(now)}"


def test_the_lead_makes_it_public_on_the_settings_page_with_an_audit(client_for, suite, lead):
    client = client_for(lead)
    page = client.get(reverse("settings", args=[suite.slug])).content.decode()
    assert "only the suite's members see it" in page
    assert f"[![flake gate](http://testserver/suites/{suite.slug}/badge.svg)]" in page
    response = client.post(reverse("settings_badge", args=[suite.slug]), {"public_badge": "on"})
    assert response.status_code == 302
    suite.refresh_from_db()
    assert suite.public_badge is True
    event = AuditEvent.objects.get(suite=suite, action=AuditEvent.Action.SETTINGS)
    assert (event.before, event.after, event.actor) == (
        {"public_badge": False}, {"public_badge": True}, "@lea")
    assert badge_of(client_for(None), suite).status_code == 200
    client_for(lead).post(reverse("settings_badge", args=[suite.slug]), {})
    suite.refresh_from_db()
    assert suite.public_badge is False
    assert badge_of(client_for(None), suite).status_code == 404
