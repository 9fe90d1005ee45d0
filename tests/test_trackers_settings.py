"""The settings page's Issue tracker section (issue 54): a lead sets a tracker, tests the
connection and reads the delivery log; a 401 from the tracker is shown there, and the next
run retries. The token is never shown again: not in a page, a log, the admin, an export
or a command's output, plain or encrypted. ``set_tracker`` sets it from the shell."""

from __future__ import annotations

import io
import logging

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from ledger.models import AuditEvent
from tests import trackers_setup
from tests.api_http import new_token
from tests.trackers_setup import PROJECTS, TOKEN, quarantined, sync_trackers
from trackers.crypto import decrypt, is_current
from trackers.models import Tracker, TrackerJob

fake, known, sleeps = trackers_setup.fake, trackers_setup.known, trackers_setup.sleeps
build_world = trackers_setup.build_world  # known's world (tests/world.py)
github = pytest.mark.parametrize("fake", ["github"], indirect=True)


def save(client, suite, fake, token=TOKEN, **extra):
    return client.post(reverse("settings_tracker_save", args=[suite.slug]), {
        "kind": fake.kind, "project": PROJECTS[fake.kind], "site": fake.site, "token": token,
        "email": "bot@acme.example", "issue_type": "Bug", "labels": "flaky-test, ci",
        "on_new_entry": "on", **extra}, headers={"HX-Request": "true"})


@github
def test_a_lead_sets_a_tracker_and_its_token_is_stored_encrypted(
        client_for, lead, known, fake):
    answer = save(client_for(lead), known, fake)
    assert "Tracker saved: GitHub Issues acme/shop." in answer.text
    tracker = Tracker.objects.get(suite=known)
    assert tracker.labels == "flaky-test,ci" and tracker.on_new_entry
    assert TOKEN not in tracker.token_encrypted and decrypt(tracker.token_encrypted) == TOKEN
    assert TOKEN not in answer.text and tracker.token_encrypted not in answer.text
    # Changed without a token: the saved one is kept.
    save(client_for(lead), known, fake, token="", labels="flaky")
    tracker.refresh_from_db()
    assert tracker.labels == "flaky" and decrypt(tracker.token_encrypted) == TOKEN


@github
def test_a_new_tracker_needs_its_token_and_a_repository_as_owner_and_name(
        client_for, lead, known, fake):
    answer = save(client_for(lead), known, fake, token="", project="shop")
    assert "The token is required." in answer.text and "owner/name" in answer.text
    assert not Tracker.objects.exists()


@pytest.mark.parametrize("fake", ["github", "gitlab", "jira"], indirect=True)
def test_test_the_connection_makes_one_harmless_read_and_says_what_it_found(
        client_for, lead, known, fake):
    save(client_for(lead), known, fake)
    answer = client_for(lead).post(reverse("settings_tracker_test", args=[known.slug]),
                                   headers={"HX-Request": "true"})
    [seen] = fake.requests()
    assert seen.method == "GET"
    found = {"github": "repository acme/shop", "gitlab": "project acme/shop",
             "jira": "account Flake Bot"}[fake.kind]
    assert f"Connected: found {found}." in answer.text


@github
def test_a_failed_test_and_the_removal_are_said_in_the_section_and_audited(
        client_for, lead, known, fake):
    client = client_for(lead)

    def post(name) -> str:
        return client.post(reverse(name, args=[known.slug]), headers={"HX-Request": "true"}).text

    assert "Set a tracker first." in post("settings_tracker_test")
    assert "No tracker to remove." in post("settings_tracker_remove")
    save(client, known, fake)
    fake.fail_next = [401]
    failed = post("settings_tracker_test")
    assert '<p class="notice failed"' in failed and "The connection failed: HTTP 401" in failed
    removed = post("settings_tracker_remove")
    assert "Tracker removed." in removed and "No tracker: entries get no issue." in removed
    assert not Tracker.objects.exists()
    [event] = AuditEvent.objects.filter(suite=known, note="tracker removed")
    assert event.actor == "@lea" and event.before["tracker"] == "GitHub Issues acme/shop at " \
        f"{fake.site}"


@github
def test_a_401_is_shown_on_the_settings_page_and_the_next_run_retries(
        client_for, lead, known, fake, sleeps, today):
    save(client_for(lead), known, fake)
    entry = quarantined(known, today)
    fake.fail_next = [401]
    assert "1 tracker request failed" in sync_trackers(fails=True)
    assert sleeps == []  # a 4xx is not retried within the run
    section = client_for(lead).get(reverse("settings_tracker", args=[known.slug])).text
    assert "The last sync failed" in section and "HTTP 401" in section
    assert entry.node.nodeid in section and "Failed" in section
    sync_trackers()
    assert len(fake.issues) == 1
    assert TrackerJob.objects.get().status == TrackerJob.Status.SENT
    section = client_for(lead).get(reverse("settings_tracker", args=[known.slug])).text
    assert "The last sync failed" not in section and "Sent" in section


@github
def test_the_ticket_is_shown_on_the_entry_node_and_owners_pages_and_in_the_full_ledger(
        client_for, lead, known, fake, sleeps, today):
    save(client_for(lead), known, fake)
    entry = quarantined(known, today)
    sync_trackers()
    link = "https://github.com/acme/shop/issues/1"
    entry.refresh_from_db()
    assert entry.ticket == link
    client = client_for(lead)
    for page in (reverse("entry", args=[known.slug, entry.pk]),
                 reverse("node", args=[known.slug, entry.node.key]),
                 reverse("owners", args=[known.slug])):
        assert f'href="{link}"' in client.get(page).text, page
    full = client.get(f"/api/v1/suites/{known.slug}/ledger?view=full", headers={
        "Authorization": f"Bearer {new_token(known, 'read')}"}).json()
    [served] = full["entries"]
    assert served["ticket"] == link and served["ticket_closed_in_tracker"] is False


def _text(response) -> str:
    assert response.status_code == 200, response
    if response.streaming:  # the CSV exports
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


def _everything_shown(client, staff_client, suite, entry) -> str:
    api = {"Authorization": f"Bearer {new_token(suite, 'read')}"}
    shown = [client.get(f"/api/v1/suites/{suite.slug}/{path}", headers=api).text
             for path in ("ledger?view=full", f"entries/{entry.pk}/events")]
    pages = [reverse("settings", args=[suite.slug]),
             reverse("settings_tracker", args=[suite.slug]),
             reverse("entry", args=[suite.slug, entry.pk]),
             reverse("owners", args=[suite.slug]),
             reverse("audit_csv", args=[suite.slug]),
             reverse("ledger_csv", args=[suite.slug])]
    shown += [_text(client.get(page)) for page in pages]
    tracker = Tracker.objects.get(suite=suite)
    admin = [reverse("admin:trackers_tracker_changelist"),
             reverse("admin:trackers_tracker_change", args=[tracker.pk]),
             reverse("admin:trackers_trackerjob_changelist"),
             reverse("admin:ledger_auditevent_changelist")]
    shown += [_text(staff_client.get(page)) for page in admin]
    return "\n".join(shown)


@github
def test_the_token_never_appears_in_a_page_a_log_the_admin_or_an_export(
        client_for, lead, staff, known, fake, sleeps, today, caplog, django_user_model):
    caplog.set_level(logging.DEBUG)
    save(client_for(lead), known, fake)
    entry = quarantined(known, today)
    fake.fail_next = [401]
    out = sync_trackers(fails=True) + sync_trackers()
    client_for(lead).post(reverse("settings_tracker_test", args=[known.slug]))
    stored = Tracker.objects.get(suite=known).token_encrypted
    staff_client = Client()
    staff_client.force_login(staff)
    shown = _everything_shown(client_for(lead), staff_client, known, entry)
    assert "acme/shop" in shown and "HTTP 401" in caplog.text  # what is looked through
    for secret in (TOKEN, stored):
        assert secret not in shown
        assert secret not in caplog.text
        assert secret not in out


def test_set_tracker_reads_the_token_from_standard_input(known, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(TOKEN + "\n"))
    out = io.StringIO()
    call_command("set_tracker", known.slug, "jira", "FLAKY", "--site",
                 "https://acme.atlassian.net", "--email", "bot@acme.example", stdout=out)
    assert TOKEN not in out.getvalue() and "the token is stored, encrypted" in out.getvalue()
    tracker = Tracker.objects.get(suite=known)
    assert (tracker.kind, tracker.project, tracker.issue_type) == ("jira", "FLAKY", "Bug")
    assert decrypt(tracker.token_encrypted) == TOKEN


@github
def test_a_token_encrypted_under_an_earlier_secret_key_still_reads_and_is_rotated(
        settings, known, fake, sleeps, today):
    settings.SECRET_KEY = "the-old-key-" + "x" * 40
    trackers_setup.set_tracker(known, fake)
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "the-new-key-" + "y" * 40
    old = Tracker.objects.get(suite=known).token_encrypted
    assert decrypt(old) == TOKEN and not is_current(old)
    quarantined(known, today)
    sync_trackers()  # reads the token under the fallback, and stores it under the new key
    assert fake.requests("POST")[0].headers["authorization"] == f"Bearer {TOKEN}"
    settings.SECRET_KEY_FALLBACKS = []
    assert decrypt(Tracker.objects.get(suite=known).token_encrypted) == TOKEN
