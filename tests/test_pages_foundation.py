"""The overview, the health check and sign-in, on the demo suite and an empty one."""

import re
from collections import Counter
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse

from board.demo import BIRTHS, ORDER_DEPENDENT, RETRY_DAYS, STATE_SETTER
from flakeboard import rules
from ledger.models import QuarantineEntry, Suite
from ledger.quarantine import quarantine_create
from ledger.tiers import tier_rule_add
from runs.ingest import report_ingest
from runs.models import Measurement
from tests.helpers import body, measurement, node_page


def test_healthz_answers_when_the_database_does(client, db):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"database": "ok"}


def test_empty_overview_explains_what_to_do(client_for, viewer, suite):
    response = client_for(viewer).get(reverse("overview", args=[suite.slug]))
    assert response.status_code == 200
    assert b"No flake report yet" in response.content


@pytest.mark.slow
@pytest.mark.django_db
def test_demo_is_idempotent_and_has_every_state(client):
    call_command("demo", stdout=None)
    call_command("demo")
    suite = Suite.objects.get(slug="demo")
    from django.utils import timezone

    today = timezone.now().date()
    states = {entry.state(today) for entry in QuarantineEntry.objects.select_related("node")}
    assert states >= {"active", "expiring", "expired", "cleared", "tier_violation"}
    # A pin the client's `pin` could print, so a gate run against the demo can match it.
    assert rules.pin_problem(suite.fixture_manifest, 200) is None
    # Two batches a day, and three attempts of a patch rerun on each of RETRY_DAYS; a report
    # a day, and one for each pull request whose new tests were measured at birth.
    assert suite.reports.count() == 90 + len(BIRTHS)
    assert suite.batches.count() == 180 + 3 * len(RETRY_DAYS)
    classified = Measurement.objects.filter(suite=suite).values_list("classification", flat=True)
    assert set(classified.distinct()) == {"", "stable", "flaky", "order_dependent",
                                          "repeat_unsafe"}
    signed_in = client.post(reverse("login"), {"username": "lead", "password": "flakeboard-demo"})
    assert signed_in.status_code == 302
    response = client.get(reverse("overview", args=["demo"]))
    assert response.status_code == 200
    assert b"expired (gate failing)" in response.content
    _the_demo_names_a_cause(client, suite)
    _the_demo_history_is_realistic(suite, today, timezone.now())


def _the_demo_names_a_cause(client, suite):
    """The order-dependent node's reports name its state-setter, a link that opens."""
    causes = Measurement.objects.filter(suite=suite, classification="order_dependent")
    assert {str(cause) for cause in causes.values_list("cause", flat=True)} == {
        str({"role": "state_setter", "nodes": [STATE_SETTER], "complete": True})}
    report = causes.filter(node__nodeid=ORDER_DEPENDENT).values_list("report", flat=True)[0]
    html = client.get(reverse("report", args=["demo", report])).content.decode()
    [href] = set(re.findall(r'<span class="cause">passes only after <a href="([^"]+)"', html))
    assert href == node_page("demo", STATE_SETTER)
    assert client.get(href).status_code == 200


def _the_demo_history_is_realistic(suite, today, now):
    """Mostly passing, some bad days, a fix proved and cleared long ago, a recent renewal,
    an entry ready to clear, and nothing after the moment it was built."""
    reports = Counter(suite.reports.values_list("status", flat=True))
    batches = Counter(suite.batches.values_list("verdict", flat=True))
    assert reports["OK"] > 0.55 * 90 and reports["WARN"] and reports["FAIL"]
    assert batches["accept"] > 0.6 * 180 and batches["hold"] and batches["reject"]
    uploads = [*suite.reports.values_list("created_at", flat=True),
               *suite.batches.values_list("created_at", flat=True)]
    assert max(uploads) <= now
    entries = QuarantineEntry.objects.filter(suite=suite)
    assert entries.filter(cleared_at__date__lt=today - timedelta(days=30)).exists()
    assert entries.filter(renewals__gt=0, cleared_at=None,
                          updated_at__date__gte=today - timedelta(days=14)).exists()
    assert entries.open().filter(ready_to_clear=True).exists()


@pytest.mark.parametrize("uploads", [1, 12])
def test_the_overview_makes_a_bounded_number_of_queries(
    client_for, viewer, suite, uploads, django_assert_max_num_queries
):
    from runs.ingest import report_ingest, signals_ingest
    from tests.helpers import body, measurement, record

    for i in range(uploads):
        report_ingest(suite=suite, body=body([measurement(f"t.py::t{i}")]), actor="ci")
        signals_ingest(suite=suite, body=body([record(f"t.py::t{i}")]), actor="ci")
    client = client_for(viewer)
    with django_assert_max_num_queries(12):
        response = client.get(reverse("overview", args=[suite.slug]))
    report_links = re.findall(rb'href="/suites/acme/reports/\d+/"', response.content)
    assert len(report_links) == min(uploads, 5)


def test_sign_in_and_sign_out(client, viewer, suite):
    from tests.conftest import PASSWORD

    page = client.get(reverse("login"))
    assert b'<label for="id_username">' in page.content
    assert b'<label for="id_password">' in page.content
    signed_in = client.post(reverse("login"), {"username": "vic", "password": PASSWORD})
    assert signed_in.status_code == 302
    home = client.get(reverse("home"), follow=True)
    assert home.redirect_chain[-1][0] == reverse("overview", args=[suite.slug])
    assert b"Sign out" in home.content and b"@vic" in home.content
    signed_out = client.post(reverse("logout"))
    assert signed_out.status_code == 302
    assert client.get(reverse("overview", args=[suite.slug])).status_code == 302


def _tiles(html: str) -> dict[str, str]:
    """The overview's tiles: their class, by their text (figure and words)."""
    found = re.findall(r'<a class="tile ?([a-z ]*)" href="[^"]*"><span class="figure">(\d+)'
                       r'</span> ([^<]+)', html)
    return {f"{figure} {words.strip()}": cls.strip() for cls, figure, words in found}


def test_tiles_are_coloured_by_their_value_and_say_their_plurals(client_for, lead, suite,
                                                                 today):
    empty = _tiles(client_for(lead).get(reverse("overview", args=[suite.slug])).content.decode())
    assert empty == {"0 active": "neutral", "0 expiring within 7 days": "neutral",
                     "0 expired": "neutral", "0 tier violations": "neutral",
                     "0 ready to clear": "neutral", "0 flaky tests in the last 7 days": "neutral"}
    report_ingest(suite=suite, body=body([measurement(f"tests/test_{i}.py::test_ok")
                                          for i in range(40)]), actor="ci")
    quarantine_create(suite=suite, nodeid="tests/test_1.py::test_ok", owner="@lea",
                      expires=today + timedelta(days=3), evidence="ci/1", actor="@lea",
                      today=today)
    tier_rule_add(suite=suite, glob="tests/test_1.py::*", tier=0, actor="@lea")
    tiles = _tiles(client_for(lead).get(reverse("overview", args=[suite.slug])).content.decode())
    assert tiles["1 tier violation"] == "bad"
    assert tiles["0 expiring within 7 days"] == "neutral"
