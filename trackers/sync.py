"""What ``manage.py sync_trackers`` does for one suite: read the audit events since its
cursor (the entries that expired, and the tests that turned flaky where the suite's switches
say so: ``trackers.triggers``) into jobs, each a row under a unique key; then
claim each job and make its request, after the quarantine's transaction is long over.
A job is claimed before its request, so a retried or a racing run never repeats what
another did; a failed job is taken again by the next run. Then the open issues are read:
one closed in the tracker is reported on its open entry (which it never clears), and a test's
issue closed there before any entry linked it is marked closed."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import date, datetime

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from flakeboard import rules
from ledger.audit import BOARD_ACTOR
from ledger.models import AuditEvent, QuarantineEntry
from ledger.tickets import entry_ticket_set
from web.outbound import Answer

from . import text
from .clients import Client
from .crypto import Unreadable, is_current, rotated
from .models import Tracker, TrackerIssue, TrackerJob
from .triggers import TRIGGERS, test_key, turned_flaky

logger = logging.getLogger("flakeboard.trackers")
Job, Status, Action = TrackerJob, TrackerJob.Status, TrackerJob.Action
OPENS = (Action.OPEN, Action.CI_FLAKY, Action.BORN_FLAKY)
EVENT_ACTIONS = {AuditEvent.Action.CREATE: Action.OPEN, AuditEvent.Action.RENEW: Action.RENEWED,
                 AuditEvent.Action.CLEAR: Action.CLEARED}


@dataclass
class Synced:
    sent: int = 0
    failed: int = 0
    closed_in_tracker: list[str] = field(default_factory=list)


def _test_issue(node_id: int) -> TrackerIssue | None:
    """The open issue of a test turning flaky that no entry links yet."""
    return TrackerIssue.objects.filter(node_id=node_id, entry__isnull=True,
                                       closed=False).first()


def _jobs_of_event(tracker: Tracker, event: AuditEvent) -> list[tuple[str, str]]:
    """(key, action) of each job an audit event calls for."""
    action = EVENT_ACTIONS[event.action]
    if action == Action.OPEN:
        # Keyed by the entry: one issue per entry, whichever event asks for it. An entry
        # for a test that has its issue links that one, whatever the switch.
        wanted = tracker.on_new_entry or _test_issue(event.entry.node_id) is not None
        return [(f"open:entry:{event.entry_id}", action)] if wanted else []
    jobs = [(f"{action}:event:{event.pk}", action)]
    if action == Action.CLEARED:
        jobs.append((f"close:entry:{event.entry_id}", Action.CLOSE))
    return jobs


def enqueue(tracker: Tracker, today: date, now: datetime) -> int:
    """The jobs since the tracker's cursor, stored; how many are new."""
    made = []
    with transaction.atomic():
        tracker = Tracker.objects.select_for_update().get(pk=tracker.pk)
        events = list(AuditEvent.objects.filter(
            suite_id=tracker.suite_id, pk__gt=tracker.cursor, entry__isnull=False,
            action__in=list(EVENT_ACTIONS)).select_related("entry").order_by("pk"))
        for event in events:
            made += [Job(suite_id=tracker.suite_id, key=key, action=action, event=event,
                         entry_id=event.entry_id, created_at=now, updated_at=now)
                     for key, action in _jobs_of_event(tracker, event)]
        expired = (QuarantineEntry.objects.filter(suite_id=tracker.suite_id)
                   .in_state(rules.EntryState.EXPIRED, today)
                   .filter(tracker_issue__isnull=False).only("pk", "expires"))
        made += [Job(suite_id=tracker.suite_id, key=f"expired:entry:{entry.pk}:{entry.expires}",
                     action=Action.EXPIRED, entry_id=entry.pk, created_at=now, updated_at=now)
                 for entry in expired]
        made += [Job(suite_id=tracker.suite_id, key=test_key(node_id), action=action,
                     node_id=node_id, created_at=now, updated_at=now)
                 for action, node_id in turned_flaky(tracker, today)
                 if not TrackerIssue.objects.filter(node_id=node_id).exists()]
        stored = Job.objects.bulk_create(made, ignore_conflicts=True)
        if events:
            Tracker.objects.filter(pk=tracker.pk).update(cursor=events[-1].pk)
    return len(stored)


def _claim(job: TrackerJob, now: datetime) -> bool:
    """Take the job for this run: stored before its request is made. False when another
    run has it, or has done it."""
    return bool(Job.objects.filter(pk=job.pk, status__in=[Status.PENDING, Status.FAILED])
                .update(status=Status.SENDING, attempts=F("attempts") + 1, error="",
                        updated_at=now))


def _waits(job: TrackerJob, issue: TrackerIssue | None) -> bool:
    """A comment or a close whose entry's issue is still to be opened waits for it; an
    entry's issue waits for its test's, which it will link."""
    if issue is not None or not job.entry_id:
        return False
    undone = Job.objects.filter(status__in=[Status.PENDING, Status.FAILED, Status.SENDING])
    if job.action == Action.OPEN:
        return undone.filter(key=test_key(job.entry.node_id)).exists()
    return undone.filter(entry_id=job.entry_id, action=Action.OPEN).exists()


def _link(client: Client, entry: QuarantineEntry, issue: TrackerIssue) -> Answer:
    """The entry of a test that has its issue links it, and says so on it."""
    answer = client.comment(issue.key, text.linked(entry))
    if answer.ok:
        TrackerIssue.objects.filter(pk=issue.pk).update(entry=entry)
        entry_ticket_set(entry=entry, url=issue.url, actor=BOARD_ACTOR)
    return answer


def _open(client: Client, entry: QuarantineEntry, now: datetime) -> Answer:
    if (issue := _test_issue(entry.node_id)) is not None:
        return _link(client, entry, issue)
    answer, opened = client.open(text.title(entry.node), text.body(entry),
                                 text.assignee(entry))
    if opened is not None:
        TrackerIssue.objects.create(entry=entry, node_id=entry.node_id, suite_id=entry.suite_id,
                                    kind=client.tracker.kind, key=opened.key, url=opened.url,
                                    created_at=now)
        entry_ticket_set(entry=entry, url=opened.url, actor=BOARD_ACTOR)
    return _named(answer, opened)


def _named(answer: Answer, opened) -> Answer:
    """An issue opened whose answer names none is a failure."""
    if opened is None and answer.ok:
        answer = Answer(False, answer.attempts, answer.response_code,
                        "the tracker's answer names no issue", answer.body)
    return answer


TURNED = {Action.CI_FLAKY: "in CI", Action.BORN_FLAKY: "at birth"}


def _open_for_test(client: Client, job: TrackerJob, now: datetime) -> Answer:
    suite, node = client.tracker.suite, job.node
    evidence = TRIGGERS[job.action].evidence(suite, node, now.date())
    answer, opened = client.open(text.title(node),
                                 text.test_body(suite, node, TURNED[job.action], evidence),
                                 None)
    if opened is not None:
        TrackerIssue.objects.create(node=node, suite_id=suite.pk, kind=client.tracker.kind,
                                    key=opened.key, url=opened.url, created_at=now)
    return _named(answer, opened)


def _request(client: Client, job: TrackerJob, issue: TrackerIssue, now: datetime) -> Answer:
    entry = job.entry
    if job.action == Action.CLOSE:
        answer = client.close(issue.key)
        if answer.ok:
            TrackerIssue.objects.filter(pk=issue.pk).update(closed=True)
        return answer
    words = {Action.RENEWED: text.renewed, Action.EXPIRED: text.expired,
             Action.CLEARED: text.cleared}[job.action]
    return client.comment(issue.key, words(entry))


def _done(job: TrackerJob, answer: Answer | None, now: datetime, error: str = "") -> None:
    if answer is None:
        status = Status.SKIPPED
    else:
        status, error = (Status.SENT, "") if answer.ok else (Status.FAILED, answer.error)
    Job.objects.filter(pk=job.pk).update(
        status=status, error=error[:2000], updated_at=now,
        response_code=answer.response_code if answer else None)


def _failed(tracker: Tracker, job: TrackerJob, error: str, now: datetime) -> None:
    message = f"{job.get_action_display()} for {job.test.nodeid}: {error}"
    Tracker.objects.filter(pk=tracker.pk).update(last_error=message[:2000], last_error_at=now)
    logger.warning("sync_trackers: %s: %s", tracker.suite.slug, message)


def deliver(client: Client, now: datetime) -> Synced:
    """Each job not done yet, in order; an entry's later jobs wait for a failed one."""
    tracker, synced, stalled = client.tracker, Synced(), set()
    jobs = (Job.objects.filter(suite_id=tracker.suite_id,
                               status__in=[Status.PENDING, Status.FAILED])
            .select_related("entry__node", "entry__suite", "node").order_by("pk"))
    for job in jobs:
        issue = (TrackerIssue.objects.filter(entry_id=job.entry_id) if job.entry_id else
                 TrackerIssue.objects.filter(node_id=job.node_id)).first()
        if job.test.pk in stalled or _waits(job, issue) or not _claim(job, now):
            continue
        if (job.action in OPENS) == (issue is not None):
            _done(job, None, now, "it has an issue already" if issue else "no issue")
            continue
        if job.action in TURNED:
            answer = _open_for_test(client, job, now)
        elif issue is None:
            answer = _open(client, job.entry, now)
        else:
            answer = _request(client, job, issue, now)
        _done(job, answer, now)
        if answer.ok:
            synced.sent += 1
            Tracker.objects.filter(pk=tracker.pk).update(last_error="", last_error_at=None)
        else:
            synced.failed += 1
            stalled.add(job.test.pk)
            _failed(tracker, job, answer.error, now)
    return synced


def check_states(client: Client, synced: Synced, now: datetime) -> None:
    """Report an issue closed in the tracker while its entry is open, on the entry; mark a
    test's issue closed there before any entry linked it, so that an entry opens its own."""
    issues = (TrackerIssue.objects.filter(suite_id=client.tracker.suite_id, closed=False)
              .filter(Q(entry__isnull=True) | Q(entry__cleared_at__isnull=True))
              .select_related("entry__node"))
    for issue in issues:
        answer, closed = client.is_closed(issue.key)
        if answer.ok and closed:
            TrackerIssue.objects.filter(pk=issue.pk).update(closed=True)
            if issue.entry is None:
                continue
            entry_ticket_set(entry=issue.entry, url=issue.url, actor=BOARD_ACTOR,
                             closed_at=now)
            synced.closed_in_tracker.append(issue.entry.node.nodeid)


def sync(tracker: Tracker, client_for, *, now: datetime | None = None) -> Synced:
    """One suite's run: its jobs stored, made, and its open issues read."""
    now = now or timezone.now()
    enqueue(tracker, now.date(), now)
    try:
        if not is_current(tracker.token_encrypted):  # SECRET_KEY rotated: a fallback reads it
            tracker.token_encrypted = rotated(tracker.token_encrypted)
            Tracker.objects.filter(pk=tracker.pk).update(token_encrypted=tracker.token_encrypted)
        client = client_for(tracker)
    except Unreadable as exc:
        Tracker.objects.filter(pk=tracker.pk).update(last_error=str(exc), last_error_at=now)
        return Synced(failed=1)
    synced = deliver(client, now)
    check_states(client, synced, now)
    return synced
