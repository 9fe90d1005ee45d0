from django.conf import settings
from django.core.management.base import BaseCommand
from django.utils import timezone

from flakeboard.rules import retention_window
from junit.summary import rebuild_summary
from ledger.commands import get_suite
from ledger.models import Suite
from runs.rollups import rebuild_rollups


class Command(BaseCommand):
    # The board's: it rebuilds what both runs and junit keep.
    help = ("Recompute the per-day reason-code rollups from the stored rows, over the "
            "RETENTION_DAYS that prune keeps whole (older rollups are kept as they are), "
            "and the summary of each test's last 30 days from the JUnit rollups.")

    def add_arguments(self, parser):
        parser.add_argument("suite", nargs="?", help="one suite (default: all)")

    def handle(self, suite=None, **options):
        suites = [get_suite(suite)] if suite else list(Suite.objects.all())
        today = timezone.now().date()
        since, _ = retention_window(settings.RETENTION_DAYS).bounds(today)
        for s in suites:
            rows = rebuild_rollups(s, since)
            tests = rebuild_summary(s, today)
            self.stdout.write(f"{s.slug}: {rows} rollup rows rebuilt, {tests} tests summarized.")
