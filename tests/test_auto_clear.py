"""Auto-clear (issue 20): per suite and off by default, ``manage.py notify`` clears every
entry ready to clear, through the clear service, with the board as the actor and the clean
measurements as the note's evidence; an entry it clears is in none of that run's digests.
A lead turns it on or off on the settings page (audited).

Runs on whichever database DATABASE_URL selects (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from ledger.audit import BOARD_ACTOR
from ledger.models import AuditEvent, QuarantineEntry, Suite
from ledger.quarantine import quarantine_create
from ledger.settings_services import auto_clear_set
from tests import test_notify_email, test_ready_to_clear
from tests.test_notify_email import BASE_URL, FINLEY, notify, subject, text
from tests.test_ready_to_clear import NODE, OTHER, fresh, measure
from tests.world import people_world

CLEARS = {"action": AuditEvent.Action.CLEAR}
# The real SMTP server on 127.0.0.1.
smtp = test_notify_email.smtp


def build_world():
    """This module's shared world (tests/world.py): the entry's owner, and the quarantined
    entry with its node known (test_ready_to_clear's) made ready to clear; built once for a
    run of the tests that ask for it."""
    world = people_world("owner")
    entry = test_ready_to_clear.add_entry(world.suite, world.today)
    world.ready = make_ready(world.suite, world.users["owner"], entry, world.today)
    return world


@pytest.fixture
def ready(settings, world):
    """The entry (expiring), ready to clear; a second entry of the suite, expiring too,
    measured but not ready; their owner @finley reachable at FINLEY."""
    settings.BASE_URL = BASE_URL
    return world.ready


def make_ready(suite, owner, entry, today):
    owner.email = FINLEY
    owner.save()
    waiting = quarantine_create(suite=suite, nodeid=OTHER, owner="@finley", actor="@finley",
                                expires=today + timedelta(days=3), evidence="ci/run-5",
                                today=today)
    reports = measure(suite, 0, 0, 0)
    measure(suite, 0, 3, nodeid=OTHER)  # 3 of 200 fail: over the budget
    assert fresh(entry).ready_to_clear and not fresh(waiting).ready_to_clear
    return {"entry": entry, "waiting": waiting, "reports": reports}


def turn_on(suite) -> Suite:
    return auto_clear_set(suite=suite, actor="@lea", on=True)


def test_off_by_default_nothing_is_cleared_and_the_digest_says_ready(smtp, suite, ready):
    assert Suite.objects.get(pk=suite.pk).auto_clear is False
    out = notify()
    assert fresh(ready["entry"]).cleared_at is None
    assert not AuditEvent.objects.filter(**CLEARS).exists()
    assert "auto-clear" not in out
    [finley] = smtp.to(FINLEY)
    assert subject(finley) == "Flakeboard: 2 expiring, 1 ready to clear in acme"
    assert f"- {NODE}\n" in text(finley)


def test_on_it_clears_exactly_the_ready_entries_as_the_board(smtp, suite, ready,
                                                                other_suite, today):
    turn_on(suite)
    # Another suite's ready entry: its suite left auto-clear off.
    Suite.objects.filter(pk=other_suite.pk).update(max_quarantined_share=1.0)
    elsewhere = quarantine_create(suite=other_suite, nodeid=NODE, owner="@finley",
                                  actor="@finley", expires=today + timedelta(days=5),
                                  evidence="ci/run-6", today=today)
    QuarantineEntry.objects.filter(pk=elsewhere.pk).update(ready_to_clear=True)
    out = notify()
    assert "acme: auto-cleared 1 entry ready to clear:" in out
    assert f"  {NODE} (owner @finley)" in out
    cleared = QuarantineEntry.objects.exclude(cleared_at=None)
    assert list(cleared) == [ready["entry"]]
    [event] = AuditEvent.objects.filter(**CLEARS)
    assert (event.entry, event.actor, event.suite) == (ready["entry"], BOARD_ACTOR, suite)
    assert event.actor == "flakeboard"
    assert event.note == fresh(ready["entry"]).cleared_note
    assert event.note.startswith("Ready to clear: the last 3 measurements")
    for report in ready["reports"]:
        assert f"0 of 200 runs failed: {BASE_URL}/suites/acme/reports/{report}/" in event.note
    # Cleared before the digests are read: it is not told as ready (nor as anything else).
    [finley] = smtp.to(FINLEY)
    assert NODE not in text(finley) and "Ready to clear" not in text(finley)
    assert OTHER in text(finley)
    assert subject(finley) == "Flakeboard: 1 expiring in acme"


def test_a_second_run_clears_nothing_more(smtp, suite, ready):
    turn_on(suite)
    notify()
    events = AuditEvent.objects.count()
    out = notify()
    assert "auto-clear" not in out
    assert AuditEvent.objects.count() == events
    assert QuarantineEntry.objects.exclude(cleared_at=None).count() == 1


def test_a_dry_run_says_what_it_would_clear_and_clears_nothing(smtp, suite, ready):
    turn_on(suite)
    events = AuditEvent.objects.count()
    out = notify("--dry-run")
    assert "acme: would auto-clear 1 entry ready to clear:" in out
    assert f"  {NODE} (owner @finley)" in out
    assert fresh(ready["entry"]).cleared_at is None
    assert AuditEvent.objects.count() == events
    assert smtp.messages == []
    # The digests it prints are those the run would send: without the entry it would clear.
    assert "Subject: Flakeboard: 1 expiring in acme" in out
    assert f"- {NODE}\n" not in out and f"- {OTHER}\n" in out


def test_an_entry_no_longer_ready_is_left_open(smtp, suite, ready):
    turn_on(suite)
    measure(suite, 4)  # over the budget: the flag is unset at ingest
    notify()
    assert fresh(ready["entry"]).cleared_at is None
    assert not AuditEvent.objects.filter(**CLEARS).exists()


# --- the setting ------------------------------------------------------------------------


def test_a_lead_turns_it_on_and_off_on_the_settings_page(client_for, lead, suite):
    client = client_for(lead)
    page = client.get(reverse("settings", args=[suite.slug])).content.decode()
    assert 'id="auto-clear"' in page and "Auto-clear is <strong>off</strong>" in page
    url = reverse("settings_auto_clear", args=[suite.slug])
    answer = client.post(url, {"auto_clear": "on"})
    assert answer.status_code == 302 and answer["Location"].endswith("#auto-clear")
    assert Suite.objects.get(pk=suite.pk).auto_clear is True
    event = AuditEvent.objects.filter(action=AuditEvent.Action.SETTINGS).last()
    assert (event.actor, event.before, event.after, event.note) == (
        "@lea", {"auto_clear": False}, {"auto_clear": True}, "auto-clear turned on")
    page = client.get(reverse("settings", args=[suite.slug])).content.decode()
    assert "Auto-clear is <strong>on</strong>" in page
    client.post(url, {})  # an unticked box is not sent
    assert Suite.objects.get(pk=suite.pk).auto_clear is False
    assert AuditEvent.objects.filter(action=AuditEvent.Action.SETTINGS).count() == 2


def test_setting_it_to_what_it_is_writes_no_event(suite):
    auto_clear_set(suite=suite, actor="@lea", on=False)
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.SETTINGS).exists()
