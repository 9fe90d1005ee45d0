"""Two sync_trackers runs at once, as cron on two hosts starts them, open one issue for one
entry, or for one test turning flaky (issue 54): the second run finds the suite's lock
taken, and, past the lock, a job already claimed. On PostgreSQL, where runs on two hosts
really overlap; each run here has its own thread, so its own database connection."""

from __future__ import annotations

import io
import threading

import pytest
from django.core.management import call_command
from django.db import connection  # noqa: F401 - read by the skipif condition

from tests import trackers_setup
from tests.test_flaky_at_birth import BORN, born
from tests.test_job_locks import Elsewhere
from tests.trackers_setup import quarantined, set_tracker
from trackers.clients import client_for
from trackers.models import Tracker, TrackerIssue, TrackerJob
from trackers.sync import sync

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif("connection.vendor != 'postgresql'",
                       reason="runs that overlap on two hosts: PostgreSQL"),
    pytest.mark.parametrize("fake", ["github"], indirect=True),
]
fake, known = trackers_setup.fake, trackers_setup.known


def test_two_sync_trackers_runs_at_once_open_one_issue(known, fake, today):
    set_tracker(known, fake)
    quarantined(known, today)
    fake.arrived = threading.Event()
    first_out = io.StringIO()
    first = Elsewhere(lambda: call_command("sync_trackers", stdout=first_out))
    first.start()
    assert fake.arrived.wait(30)  # the first run's request is in the tracker's hands
    second_out = io.StringIO()
    call_command("sync_trackers", stdout=second_out)
    fake.release.set()
    first.finish()
    assert "another sync_trackers run holds this suite; skipped" in second_out.getvalue()
    assert "acme: 1 request made, 0 failed." in first_out.getvalue()
    assert len(fake.requests("POST")) == 1 and len(fake.issues) == 1


def test_a_run_past_the_lock_finds_the_job_claimed_and_leaves_it(known, fake, today):
    set_tracker(known, fake)
    quarantined(known, today)
    fake.arrived = threading.Event()
    tracker = Tracker.objects.get(suite=known)
    first = Elsewhere(lambda: sync(tracker, client_for))
    first.start()
    assert fake.arrived.wait(30)
    assert TrackerJob.objects.get().status == TrackerJob.Status.SENDING  # claimed first
    second = sync(tracker, client_for)  # no lock: only the claim stands between them
    fake.release.set()
    first.finish()
    assert second.sent == second.failed == 0
    assert len(fake.requests("POST")) == 1
    assert TrackerJob.objects.get().status == TrackerJob.Status.SENT


def test_two_runs_past_the_lock_open_one_issue_for_a_test_flaky_at_birth(known, fake):
    set_tracker(known, fake, on_born_flaky=True)
    born(known)
    fake.arrived = threading.Event()
    tracker = Tracker.objects.get(suite=known)
    first = Elsewhere(lambda: sync(tracker, client_for))
    first.start()
    assert fake.arrived.wait(30)
    second = sync(tracker, client_for)  # it finds the test's job, under its key, claimed
    fake.release.set()
    first.finish()
    assert second.sent == second.failed == 0
    assert len(fake.requests("POST")) == 1 and TrackerJob.objects.count() == 1
    assert TrackerIssue.objects.get().node.nodeid == BORN
