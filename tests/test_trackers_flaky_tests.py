"""Issue 54's other two triggers, each a switch of the suite's tracker, off by default: a
test turning flaky in CI for the first time (a JUnit flip, a flip between gate attempts)
and a new test flaky at birth each open one issue tied to the test, at the next
sync_trackers, against a fake tracker on 127.0.0.1. A later quarantine entry for that test
links the issue (and comments on it) rather than opening a second."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from junit.ingest import junit_ingest
from ledger.models import AuditEvent, Node, QuarantineEntry
from tests import trackers_setup
from tests.junit_files import junit_xml
from tests.test_flaky_at_birth import BORN, born
from tests.test_flaky_flips import FLIPPED, flip
from tests.test_trackers_settings import save
from tests.trackers_setup import quarantined, set_tracker, sync_trackers
from trackers.models import Tracker, TrackerIssue, TrackerJob
from trackers.services import TrackerFields, tracker_set

fake, known, sleeps = trackers_setup.fake, trackers_setup.known, trackers_setup.sleeps
build_world = trackers_setup.build_world  # known's world (tests/world.py)
github = pytest.mark.parametrize("fake", ["github"], indirect=True)
OPEN_PATH = "/repos/acme/shop/issues"
REFUND = "tests/test_pay.py::test_refund"


def flake(suite, nodeid: str, *, commit: str, message: str = "assert 1 == 2", days_ago=0):
    """One CI job on a topic branch in which ``nodeid`` failed, was rerun and passed."""
    module, name = nodeid.replace(".py::", "::").split("::")
    case = (module.replace("/", "."), name)
    junit_ingest(suite=suite, actor="ci", query={"commit": commit, "branch": "topic"},
                 body=junit_xml((*case, "failed", message), (*case, "passed")),
                 now=timezone.now() - timedelta(days=days_ago))


def ci_issue(suite, fake) -> TrackerIssue:
    """The issue opened for a known node (one a test may quarantine) flaky in CI."""
    set_tracker(suite, fake, on_ci_flaky=True)
    flake(suite, "tests/test_flaky.py::test_1", commit="c1")
    sync_trackers()
    return TrackerIssue.objects.get()


def opened(fake) -> list:
    return [seen for seen in fake.requests("POST") if seen.path == OPEN_PATH]


def test_a_junit_flip_opens_one_issue_for_its_test_and_a_second_run_none(
        known, fake, sleeps):
    set_tracker(known, fake, on_ci_flaky=True)
    nodeid = REFUND
    flake(known, nodeid, commit="abc1234", message="timeout after 2.5s")
    assert "1 request made, 0 failed" in sync_trackers()
    [seen] = fake.requests("POST")
    assert seen.method == "POST"
    node = Node.objects.get(suite=known, nodeid=nodeid)
    issue = TrackerIssue.objects.get()
    assert (issue.node, issue.entry) == (node, None)
    if fake.kind == "github":
        said = seen.body["body"]
        assert seen.path == OPEN_PATH and seen.body["title"] == f"Flaky test: {nodeid}"
        assert f"{nodeid} turned flaky in CI" in said
        assert "Flaky in CI's JUnit files" in said
        assert "Flaky failures: 1; runs: 2 (rate 50.00%" in said
        assert "- timeout after <n>s (1 failure)" in said
        assert "https://board.example" + reverse("node", args=[known.slug, node.key]) in said
    assert "0 requests made" in sync_trackers()
    assert len(fake.requests("POST")) == 1 and TrackerIssue.objects.count() == 1


@github
def test_a_flip_between_gate_attempts_opens_one_issue_naming_its_commit(known, fake, sleeps):
    set_tracker(known, fake, on_ci_flaky=True)
    flip(known, commit="abc1234def")
    sync_trackers()
    sync_trackers()
    [seen] = opened(fake)
    assert seen.body["title"] == f"Flaky test: {FLIPPED}"
    assert "Flipped between gate attempts at commit abc1234def" in seen.body["body"]
    assert "attempt 1 failed it, attempt 2 passed it" in seen.body["body"]


@github
def test_a_new_test_flaky_at_birth_opens_one_issue(known, fake, sleeps):
    set_tracker(known, fake, on_born_flaky=True)
    report = born(known, commit="abc1234def")
    sync_trackers()
    sync_trackers()
    [seen] = opened(fake)
    said = seen.body["body"]
    assert seen.body["title"] == f"Flaky test: {BORN}"
    assert f"{BORN} turned flaky at birth" in said
    assert "Flaky at birth at commit abc1234def" in said
    assert "Failed runs: 6; runs at birth: 30 (rate 20.00%, upper 95% bound 37.31%)" in said
    assert reverse("report", args=[known.slug, report.pk]) in said


@github
def test_with_the_switches_off_no_test_opens_an_issue(known, fake, sleeps):
    set_tracker(known, fake)
    flake(known, REFUND, commit="c1")
    flip(known)
    born(known)
    sync_trackers()
    assert fake.requests("POST") == []


@github
def test_each_switch_opens_for_its_own_evidence_only(known, fake, sleeps):
    set_tracker(known, fake, on_born_flaky=True)
    flake(known, REFUND, commit="c1")
    flip(known)
    sync_trackers()
    assert fake.requests("POST") == []
    set_tracker(known, fake, on_ci_flaky=True)
    born(known)
    sync_trackers()
    assert len(opened(fake)) == 2  # the flip and the JUnit flake; the birth not


@github
def test_evidence_seen_before_the_switch_was_turned_on_opens_no_issue(known, fake, sleeps):
    born(known, days_ago=2)
    flake(known, REFUND, commit="c1", days_ago=3)
    flip(known, commit="c2", days_ago=1)
    set_tracker(known, fake, on_ci_flaky=True, on_born_flaky=True)
    flake(known, REFUND, commit="c3")  # flaky again, but not for the first time
    flip(known, commit="c4")
    sync_trackers()
    assert fake.requests("POST") == []


@github
def test_a_later_entry_for_the_test_links_its_issue_and_opens_no_second(
        known, fake, sleeps, today):
    issue = ci_issue(known, fake)
    entry = quarantined(known, today, 1)
    assert "1 request made" in sync_trackers()
    assert len(opened(fake)) == 1
    [comment] = [seen for seen in fake.requests("POST") if seen.path != OPEN_PATH]
    assert comment.path == f"{OPEN_PATH}/{issue.key}/comments"
    assert "Quarantined in Flakeboard" in comment.body["body"] and "@finley" in comment.body["body"]
    issue.refresh_from_db()
    assert issue.entry_id == entry.pk
    assert QuarantineEntry.objects.get(pk=entry.pk).ticket == issue.url
    sync_trackers()
    assert len(fake.requests("POST")) == 2


@github
def test_the_switches_are_audited_and_remember_the_day_they_were_turned_on(
        known, fake, today):
    set_tracker(known, fake)
    tracker = Tracker.objects.get()
    assert (tracker.on_ci_flaky, tracker.on_born_flaky, tracker.ci_flaky_since) == (
        False, False, None)
    set_tracker(known, fake, on_ci_flaky=True)
    tracker.refresh_from_db()
    assert tracker.on_ci_flaky and tracker.ci_flaky_since == today
    event = AuditEvent.objects.filter(suite=known, action=AuditEvent.Action.SETTINGS).latest("pk")
    assert (event.before["on_ci_flaky"], event.after["on_ci_flaky"]) == (False, True)
    tracker_set(suite=known, token="", actor="@lea", fields=TrackerFields(
        kind="github", project="acme/shop", site=fake.site))
    tracker.refresh_from_db()
    assert not tracker.on_ci_flaky and tracker.ci_flaky_since is None


@github
def test_a_test_s_issue_claimed_by_a_run_that_died_is_never_opened_twice(known, fake, sleeps):
    set_tracker(known, fake, on_born_flaky=True)
    born(known)
    sync_trackers()
    # A run that made the request and died before recording the issue leaves its claim.
    TrackerIssue.objects.all().delete()
    TrackerJob.objects.update(status=TrackerJob.Status.SENDING)
    sync_trackers()
    assert len(opened(fake)) == 1 and TrackerJob.objects.count() == 1


@github
def test_a_lead_turns_the_switches_on_in_the_settings_form(client_for, lead, known, fake):
    answer = save(client_for(lead), known, fake, on_ci_flaky="on", on_born_flaky="on")
    assert "Tracker saved" in answer.text
    assert "Open an issue for a new test flaky at birth" in answer.text
    tracker = Tracker.objects.get()
    assert tracker.on_ci_flaky and tracker.on_born_flaky and tracker.on_new_entry
    save(client_for(lead), known, fake, token="")
    tracker.refresh_from_db()
    assert not tracker.on_ci_flaky and not tracker.on_born_flaky


@github
def test_the_settings_section_says_the_switches_and_logs_a_test_s_issue(
        client_for, lead, known, fake, sleeps, today):
    set_tracker(known, fake, on_born_flaky=True)
    born(known)
    sync_trackers()
    page = client_for(lead).get(reverse("settings_tracker", args=[known.slug])).text
    assert f"a new test flaky at birth since {today.isoformat()}" in page
    assert "turning flaky in CI for the first time since" not in page
    node = Node.objects.get(suite=known, nodeid=BORN)
    assert "Open an issue: flaky at birth" in page
    assert reverse("node", args=[known.slug, node.key]) in page


@github
def test_a_test_s_issue_closed_in_the_tracker_is_not_linked_by_a_later_entry(
        known, fake, sleeps, today):
    first = ci_issue(known, fake)
    fake.issues[first.key] = "closed"  # closed in GitHub, before any entry
    sync_trackers()
    first.refresh_from_db()
    assert first.closed and first.entry is None
    entry = quarantined(known, today, 1)
    sync_trackers()
    assert len(opened(fake)) == 2
    second = TrackerIssue.objects.get(entry=entry)
    assert second.pk != first.pk
    assert QuarantineEntry.objects.get(pk=entry.pk).ticket == second.url
