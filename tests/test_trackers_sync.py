"""A quarantine opens, follows and closes an issue in GitHub, GitLab or Jira (issue 54),
each checked against a fake tracker on 127.0.0.1 for the documented request: method,
path, auth header, JSON fields."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from junit.ingest import junit_ingest
from ledger.models import QuarantineEntry
from ledger.quarantine import quarantine_clear, quarantine_renew
from tests import trackers_setup
from tests.junit_files import junit_xml
from tests.trackers_setup import AUTH, quarantined, set_tracker, sync_trackers
from trackers.clients import client_for
from trackers.models import TrackerIssue, TrackerJob
from trackers.sync import _claim, enqueue, sync

fake, known, sleeps = trackers_setup.fake, trackers_setup.known, trackers_setup.sleeps
build_world = trackers_setup.build_world  # known's world (tests/world.py)
OPEN_PATHS = {"github": "/repos/acme/shop/issues", "gitlab": "/api/v4/projects/acme%2Fshop/issues",
              "jira": "/rest/api/3/issue"}
COMMENT_PATHS = {"github": "/repos/acme/shop/issues/1/comments",
                 "gitlab": "/api/v4/projects/acme%2Fshop/issues/1/notes",
                 "jira": "/rest/api/3/issue/FLAKY-1/comment"}


def _text(kind: str, payload: dict) -> str:
    """The issue's body or a comment's text, as each API carries it."""
    if kind == "jira":
        doc = payload["fields"]["description"] if "fields" in payload else payload["body"]
        assert doc["type"] == "doc" and doc["version"] == 1
        return "\n".join(part["content"][0]["text"] for part in doc["content"])
    return payload.get("description") or payload["body"]


def test_a_new_entry_opens_one_issue_naming_the_test_and_linked_as_its_ticket(
        known, fake, sleeps, today):
    set_tracker(known, fake)
    entry = quarantined(known, today)
    assert "1 request made, 0 failed" in sync_trackers()
    [seen] = fake.requests("POST")
    assert seen.path == OPEN_PATHS[fake.kind]
    header, value = AUTH[fake.kind]
    assert seen.headers[header] == value
    nodeid = entry.node.nodeid
    if fake.kind == "github":
        assert seen.body["title"] == f"Flaky test: {nodeid}"
        assert seen.body["labels"] == ["flaky-test"] and seen.body["assignees"] == ["finley"]
    elif fake.kind == "gitlab":
        assert seen.body["title"] == f"Flaky test: {nodeid}" and seen.body["labels"] == "flaky-test"
    else:
        fields = seen.body["fields"]
        assert fields["summary"] == f"Flaky test: {nodeid}"
        assert fields["project"] == {"key": "FLAKY"} and fields["issuetype"] == {"name": "Bug"}
        assert fields["labels"] == ["flaky-test"]
    said = _text(fake.kind, seen.body)
    assert "5 failures in 200 runs" in said and "Owner: @finley" in said
    assert f"Expires: {entry.expires.isoformat()}" in said
    assert f"https://board.example/suites/{known.slug}/ledger/{entry.pk}/" in said
    entry.refresh_from_db()
    issue = TrackerIssue.objects.get(entry=entry)
    assert entry.ticket == issue.url and entry.ticket.startswith(("https://", "http://"))
    # Again: nothing new, no second issue.
    assert "0 requests made" in sync_trackers()
    assert len(fake.requests("POST")) == 1


def test_renewal_and_expiry_each_comment_once(known, fake, sleeps, today):
    set_tracker(known, fake)
    entry = quarantined(known, today)
    sync_trackers()
    entry = quarantine_renew(entry=entry, expires=today + timedelta(days=20),
                             evidence="ci/run-8", actor="@finley", today=today)
    sync_trackers()
    [renewed] = [s for s in fake.requests("POST") if s.path == COMMENT_PATHS[fake.kind]]
    assert "Renewed in Flakeboard until" in _text(fake.kind, renewed.body)
    header, value = AUTH[fake.kind]
    assert renewed.headers[header] == value
    after_expiry = timezone.now() + (entry.expires - today) + timedelta(days=1)
    for _ in range(2):  # the expiry is commented on once, however many runs see it
        sync(known.tracker, client_for, now=after_expiry)
    comments = [s for s in fake.requests("POST") if s.path == COMMENT_PATHS[fake.kind]]
    assert len(comments) == 2
    assert "The quarantine expired on" in _text(fake.kind, comments[1].body)


def test_clearing_comments_with_the_clean_evidence_and_closes_the_issue(
        known, fake, sleeps, today):
    set_tracker(known, fake)
    entry = quarantined(known, today)
    sync_trackers()
    QuarantineEntry.objects.filter(pk=entry.pk).update(trail=[
        {"report": 9, "n": 300, "fails": 0, "classification": "pass", "clean": True}])
    entry.refresh_from_db()
    quarantine_clear(entry=entry, note="fixed the race in the cache", actor="@finley")
    sync_trackers()
    [comment] = [s for s in fake.requests("POST") if s.path == COMMENT_PATHS[fake.kind]]
    said = _text(fake.kind, comment.body)
    assert "fixed the race in the cache" in said and "0 failures in 300 runs" in said
    if fake.kind == "github":
        [close] = fake.requests("PATCH")
        assert close.path == "/repos/acme/shop/issues/1" and close.body["state"] == "closed"
    elif fake.kind == "gitlab":
        [close] = fake.requests("PUT")
        assert close.body == {"state_event": "close"}
    else:
        [close] = [s for s in fake.requests("POST") if s.path.endswith("/transitions")]
        assert close.body == {"transition": {"id": "31"}}  # the transition into "done"
    assert fake.issues == {"FLAKY-1" if fake.kind == "jira" else "1": "closed"}
    assert TrackerIssue.objects.get(entry=entry).closed


def test_an_issue_closed_in_the_tracker_is_reported_and_never_clears_the_entry(
        known, fake, sleeps, today):
    set_tracker(known, fake)
    entry = quarantined(known, today)
    sync_trackers()
    [key] = fake.issues
    fake.issues[key] = "closed"
    out = sync_trackers()
    assert f"the issue of {entry.node.nodeid} was closed in the tracker" in out
    entry.refresh_from_db()
    assert entry.cleared_at is None and entry.ticket_closed_at is not None


@pytest.mark.parametrize("fake", ["github"], indirect=True)
def test_a_failed_request_is_retried_by_the_next_run_and_opens_one_issue(
        known, fake, sleeps, today):
    set_tracker(known, fake)
    quarantined(known, today)
    fake.fail_next = [502, 502, 502]  # the three attempts of one run, with backoff
    assert "failed" in sync_trackers(fails=True)
    assert sleeps == [1.0, 3.0]
    assert TrackerJob.objects.get().status == TrackerJob.Status.FAILED
    sync_trackers()
    assert len(fake.requests("POST")) == 4 and len(fake.issues) == 1
    assert TrackerJob.objects.get().status == TrackerJob.Status.SENT


@pytest.mark.parametrize("fake", ["github"], indirect=True)
def test_a_job_claimed_by_a_run_that_died_is_never_made_twice(known, fake, sleeps, today):
    set_tracker(known, fake)
    quarantined(known, today)
    sync_trackers()
    # A run that made the request and died before recording it leaves its claim behind.
    TrackerIssue.objects.all().delete()
    TrackerJob.objects.update(status=TrackerJob.Status.SENDING)
    sync_trackers()
    assert len(fake.requests("POST")) == 1


@pytest.mark.parametrize("fake", ["github"], indirect=True)
def test_an_entry_made_with_the_switch_off_opens_no_issue(known, fake, sleeps, today):
    set_tracker(known, fake, on_new_entry=False)
    quarantined(known, today)
    sync_trackers()
    assert fake.requests("POST") == []


@pytest.mark.parametrize("fake", ["github"], indirect=True)
def test_entries_made_before_the_tracker_was_set_get_no_issue(known, fake, sleeps, today):
    quarantined(known, today)
    set_tracker(known, fake)
    sync_trackers()
    assert fake.requests("POST") == []


@pytest.mark.parametrize("fake", ["github"], indirect=True)
def test_a_job_is_claimed_by_one_run_only(known, fake, today):
    set_tracker(known, fake)
    quarantined(known, today)
    enqueue(known.tracker, today, timezone.now())
    job = TrackerJob.objects.get()
    # Two runs that both read the job as pending: the first to claim it has it.
    assert _claim(job, timezone.now()) is True
    assert _claim(job, timezone.now()) is False
    assert TrackerJob.objects.get().attempts == 1


@pytest.mark.parametrize("fake", ["github"], indirect=True)
def test_the_issue_gives_the_top_failure_signatures_ci_saw(known, fake, sleeps, today):
    # tests/test_flaky.py::test_1 failed, was rerun and passed, in two jobs on a branch.
    for commit in ("c1", "c2"):
        junit_ingest(suite=known, actor="ci", query={"commit": commit, "branch": "topic"},
                     body=junit_xml(("tests.test_flaky", "test_1", "failed", "timeout after 2.5s"),
                                    ("tests.test_flaky", "test_1", "passed")))
    set_tracker(known, fake)
    quarantined(known, today)
    sync_trackers()
    [seen] = fake.requests("POST")
    assert "- timeout after <n>s (2 failures)" in seen.body["body"]
