from django.conf import settings
from django.core.management.base import BaseCommand
from django.utils import timezone

from flakeboard.rules import retention_window
from ledger.commands import get_suite
from ledger.models import Suite
from runs.rollups import rebuild_rollups


class Command(BaseCommand):
    help = ("Recompute the per-day reason-code rollups from the stored rows, over the "
            "RETENTION_DAYS that prune keeps whole; older rollups are kept as they are.")

    def add_arguments(self, parser):
        parser.add_argument("suite", nargs="?", help="one suite (default: all)")

    def handle(self, suite=None, **options):
        suites = [get_suite(suite)] if suite else list(Suite.objects.all())
        since, _ = retention_window(settings.RETENTION_DAYS).bounds(timezone.now().date())
        for s in suites:
            rows = rebuild_rollups(s, since)
            self.stdout.write(f"{s.slug}: {rows} rollup rows rebuilt.")
