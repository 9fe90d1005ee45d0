"""Cron on every host: two runs of ``notify`` or a prune started at once do the work once
(ledger/job_locks.py). The second finds the suite's (or the prune's) lock taken, says so
and exits 0. On PostgreSQL the lock is an advisory lock of the run's connection; on SQLite
a row, taken over when a dead run left it behind.

Runs on whichever database DATABASE_URL selects; each run here has its own connection, as
two hosts would."""

from __future__ import annotations

import io
import threading
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from ledger.job_locks import STALE_AFTER, _take_row, job_lock
from ledger.models import JobLock
from notify.management.commands import notify as notify_command
from tests.test_notify_email import FINLEY, LEA, QA, ledger, smtp  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db(transaction=True)


class Elsewhere(threading.Thread):
    """A run on another host: its own thread, so its own database connection."""

    def __init__(self, work):
        super().__init__(daemon=True)
        self.work, self.error = work, None

    def run(self):
        try:
            self.work()
        except BaseException as exc:
            self.error = exc
        finally:
            connection.close()

    def finish(self):
        self.join(timeout=60)
        assert not self.is_alive()
        if self.error is not None:
            raise self.error


def test_two_notify_runs_at_once_send_one_digest_per_recipient(smtp, ledger, monkeypatch):  # noqa: F811
    sending, release = threading.Event(), threading.Event()
    send_digest = notify_command.send_digest

    def held_up(digest):
        sending.set()  # the first run is sending: the second starts now
        assert release.wait(30)
        return send_digest(digest)

    monkeypatch.setattr(notify_command, "send_digest", held_up)
    first_out = io.StringIO()
    first = Elsewhere(lambda: call_command("notify", stdout=first_out, stderr=io.StringIO()))
    first.start()
    assert sending.wait(30)
    second_out = io.StringIO()
    call_command("notify", stdout=second_out, stderr=io.StringIO())  # exits 0
    release.set()
    first.finish()
    assert second_out.getvalue().splitlines()[0] == (
        "acme: another notify run holds this suite; skipped (it sends the digests).")
    assert "acme: 3 digests sent" in first_out.getvalue()
    assert sorted(m["To"] for m in smtp.messages) == [FINLEY, LEA, QA]
    # The lock is let go: the next run does the suite (nothing is due again today).
    third_out = io.StringIO()
    call_command("notify", stdout=third_out, stderr=io.StringIO())
    assert "skipped" not in third_out.getvalue()


@pytest.mark.parametrize(("command", "job"), [("prune", "prune"), ("prune_junit", "prune_junit")])
def test_a_second_prune_finds_the_job_taken(command, job):
    holding, release = threading.Event(), threading.Event()

    def hold():
        with job_lock(job) as held:
            assert held
            holding.set()
            assert release.wait(30)

    other = Elsewhere(hold)
    other.start()
    assert holding.wait(30)
    out = io.StringIO()
    call_command(command, stdout=out)
    dry = io.StringIO()
    call_command(command, "--dry-run", stdout=dry)  # a dry run deletes nothing: no lock
    release.set()
    other.finish()
    assert out.getvalue() == f"Another {job} run holds the job: skipped (it deletes).\n"
    assert dry.getvalue().startswith("Would delete")
    after = io.StringIO()
    call_command(command, stdout=after)
    assert after.getvalue().startswith("Deleted")


def test_the_lock_row_of_a_dead_run_is_taken_over_once_stale():
    assert _take_row("notify", 7, "host-a:1")
    assert not _take_row("notify", 7, "host-b:2")  # a live run holds it
    assert _take_row("notify", 8, "host-b:2")  # another suite's is its own
    JobLock.objects.filter(job="notify", suite_id=7).update(
        taken_at=timezone.now() - STALE_AFTER - timedelta(minutes=1))
    assert _take_row("notify", 7, "host-b:2")  # host-a died hours ago
    assert JobLock.objects.get(job="notify", suite_id=7).holder == "host-b:2"
    assert not _take_row("notify", 7, "host-c:3")
