"""manage.py sync_trackers: each suite's issues opened, commented on and closed."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError

from flakeboard.rules.text import plural
from ledger.commands import get_suite
from ledger.job_locks import job_lock
from trackers.clients import client_for
from trackers.models import Tracker
from trackers.sync import sync


class Command(BaseCommand):
    sleep = staticmethod(time.sleep)  # between a request's attempts; tests make it instant
    help = (
        "For each suite with an issue tracker: open an issue for each new quarantine entry, "
        "comment on renewal and on expiry, comment and close on clearing, and report an issue "
        "closed in the tracker while its entry is open; with the tracker's switches on, open "
        "one for a test turning flaky in CI or flaky at birth. Each job is claimed before its "
        "request, so a retried or repeated run never does it twice; a failed one is tried "
        "again by the next run. Run it from cron; started on several hosts at once, each "
        "suite is done by one run."
    )

    def add_arguments(self, parser):
        parser.add_argument("--suite", metavar="SLUG", help="only this suite")

    def handle(self, *args, suite=None, **options):
        trackers = Tracker.objects.select_related("suite").order_by("suite__slug")
        if suite:
            trackers = trackers.filter(suite=get_suite(suite))
        failed = 0
        for tracker in trackers:
            slug = tracker.suite.slug
            with job_lock("sync_trackers", tracker.suite_id) as held:
                if not held:
                    self.stdout.write(f"{slug}: another sync_trackers run holds this suite; "
                                      "skipped.")
                    continue
                synced = sync(tracker, lambda t: client_for(t, sleep=self.sleep))
            failed += synced.failed
            self.stdout.write(f"{slug}: {plural(synced.sent, 'request')} made, "
                              f"{synced.failed} failed.")
            for nodeid in synced.closed_in_tracker:
                self.stdout.write(f"{slug}: the issue of {nodeid} was closed in the tracker; "
                                  "its entry stays open.")
        if failed:
            raise CommandError(f"{plural(failed, 'tracker request')} failed (see the settings "
                               "page's tracker log); the next run tries them again.")
