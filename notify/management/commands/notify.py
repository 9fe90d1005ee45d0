"""manage.py notify: each owner's daily digest of the entries that need them."""

from __future__ import annotations

import logging
import time
from collections import Counter

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from flakeboard.rules.text import plural
from ledger.models import Suite
from notify.digests import suite_digests
from notify.send import Outcome, message, send_digest, undelivered
from notify.webhooks import send_webhook, webhook_due
from web.commands import get_suite

logger = logging.getLogger("flakeboard.notify")


class Command(BaseCommand):
    sleep = staticmethod(time.sleep)  # between a webhook's attempts; tests make it instant
    help = (
        "E-mail each owner one digest per suite: entries expiring within 7 days, expired, "
        "tier violations (and ready to clear), and post the suite's items to its webhook. "
        "Idempotent per day: run it from cron or a "
        "systemd timer; an item is sent at most once a day, a failed one again on a later run."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true",
                            help="print what would be sent; send and record nothing")
        parser.add_argument("--suite", metavar="SLUG", help="only this suite")

    def handle(self, *args, dry_run=False, suite=None, **options):
        today = timezone.now().date()
        suites = [get_suite(suite)] if suite else list(Suite.objects.all())
        failed = 0
        for each in suites:
            digests, unheard = suite_digests(each, today)
            if unheard:
                logger.error("notify: %s in %s: no owner reachable and no lead with an e-mail",
                             plural(len(unheard), "item"), each.slug)
                self.stderr.write(f"{each.slug}: {plural(len(unheard), 'item')} with nobody "
                                  "to tell (no reachable owner, no lead or staff with an e-mail)")
            if dry_run:
                self._print(each, [undelivered(d) for d in digests])
                if (due := webhook_due(each, today)) is not None:
                    self.stdout.write(f"{each.slug}: {plural(due, 'item')} would be posted "
                                      "to the webhook.")
                continue
            outcomes = Counter(send_digest(digest) for digest in digests)
            failed += outcomes[Outcome.FAILED]
            self.stdout.write(f"{each.slug}: " + ", ".join(
                f"{plural(outcomes[o], 'digest')} {o}" for o in Outcome) + ".")
            if (posted := send_webhook(each, today, sleep=self.sleep)) is not None:
                failed += posted == Outcome.FAILED
                self.stdout.write(f"{each.slug}: webhook {posted}.")
        if failed:
            raise CommandError(f"{plural(failed, 'digest')} failed to send (see the log); "
                               "they are recorded, and the next run today tries them again.")

    def _print(self, suite, digests):
        due = [digest for digest in digests if digest.items]
        self.stdout.write(f"{suite.slug}: {plural(len(due), 'digest')} would be sent "
                          "(dry run: nothing sent, nothing recorded).")
        for digest in due:
            mail = message(digest)
            self.stdout.write(f"\nTo: {', '.join(mail.to)}\nSubject: {mail.subject}\n")
            self.stdout.write(mail.body)
