"""manage.py notify: each owner's daily digest of the entries that need them."""

from __future__ import annotations

import logging
import time
from collections import Counter
from contextlib import nullcontext

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse
from django.utils import timezone

from flakeboard import rules
from flakeboard.rules.text import plural
from ledger.clearance import auto_clear
from ledger.commands import get_suite
from ledger.job_locks import job_lock
from ledger.models import Suite
from notify.digests import suite_digests
from notify.send import Outcome, message, send_digest, undelivered
from notify.webhooks import send_webhook, webhook_due

logger = logging.getLogger("flakeboard.notify")


class Command(BaseCommand):
    sleep = staticmethod(time.sleep)  # between a webhook's attempts; tests make it instant
    help = (
        "E-mail each owner one digest per suite: entries expiring within "
        f"{rules.EXPIRING_WITHIN_DAYS} days, expired, tier violations (and ready to clear), "
        "and to the suite's leads its API tokens "
        "expiring within 14 days; post the suite's items to its webhook. A suite with "
        "auto-clear on has its ready entries cleared first. Idempotent per day: run it from "
        "cron or a systemd timer; an item is sent at most once a day, a failed one again on a "
        "later run. Started on several hosts at once, each suite is done by one run: the "
        "others say so and skip it."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true",
                            help="print what would be cleared and sent; clear, send and "
                                 "record nothing")
        parser.add_argument("--suite", metavar="SLUG", help="only this suite")

    def handle(self, *args, dry_run=False, suite=None, **options):
        now = timezone.now()
        today = now.date()
        suites = [get_suite(suite)] if suite else list(Suite.objects.all())
        failed = 0
        for each in suites:
            # A dry run changes nothing: it neither waits for a run nor holds one back.
            with nullcontext(True) if dry_run else job_lock("notify", each.pk) as held:
                if not held:
                    self.stdout.write(f"{each.slug}: another notify run holds this suite; "
                                      "skipped (it sends the digests).")
                    continue
                failed += self._notify(each, dry_run, today, now)
        if failed:
            raise CommandError(f"{plural(failed, 'digest')} failed to send (see the log); "
                               "they are recorded, and the next run today tries them again.")

    def _notify(self, each, dry_run, today, now) -> int:
        """One suite's auto-clear, digests and webhook; how many failed to send."""
        skip = {entry.pk for entry in self._auto_clear(each, dry_run)}
        digests, unheard = suite_digests(each, today, now=now, skip=skip)
        if unheard:
            logger.error("notify: %s in %s: no owner reachable and no lead with an e-mail",
                         plural(len(unheard), "item"), each.slug)
            self.stderr.write(f"{each.slug}: {plural(len(unheard), 'item')} with nobody "
                              "to tell (no reachable owner, no lead or staff with an e-mail)")
        if dry_run:
            self._print(each, [undelivered(d) for d in digests])
            if (due := webhook_due(each, today, skip)) is not None:
                self.stdout.write(f"{each.slug}: {plural(due, 'item')} would be posted "
                                  "to the webhook.")
            return 0
        outcomes = Counter(send_digest(digest) for digest in digests)
        failed = outcomes[Outcome.FAILED]
        self.stdout.write(f"{each.slug}: " + ", ".join(
            f"{plural(outcomes[o], 'digest')} {o}" for o in Outcome) + ".")
        if (posted := send_webhook(each, today, sleep=self.sleep)) is not None:
            failed += posted == Outcome.FAILED
            self.stdout.write(f"{each.slug}: webhook {posted}.")
        return failed

    def _auto_clear(self, suite, dry_run):
        """Clear the suite's ready entries when it turned auto-clear on, before the digests
        are read: an entry cleared here is in none of them (the audit trail has it)."""

        def report_url(report: int) -> str:
            return settings.BASE_URL + reverse("report", args=[suite.slug, report])

        cleared = auto_clear(suite=suite, report_url=report_url, dry_run=dry_run)
        if cleared:
            verb = "would auto-clear" if dry_run else "auto-cleared"
            self.stdout.write(f"{suite.slug}: {verb} {plural(len(cleared), 'entry', 'entries')} "
                              "ready to clear:")
            for entry in cleared:
                self.stdout.write(f"  {entry.node.nodeid} (owner {entry.owner})")
        return cleared

    def _print(self, suite, digests):
        due = [digest for digest in digests if digest.items]
        self.stdout.write(f"{suite.slug}: {plural(len(due), 'digest')} would be sent "
                          "(dry run: nothing sent, nothing recorded).")
        for digest in due:
            mail = message(digest)
            self.stdout.write(f"\nTo: {', '.join(mail.to)}\nSubject: {mail.subject}\n")
            self.stdout.write(mail.body)
