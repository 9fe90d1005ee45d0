from django.core.management.base import BaseCommand

from ledger.models import Suite
from runs.rollups import rebuild_rollups
from web.commands import get_suite


class Command(BaseCommand):
    help = "Recompute the per-day reason-code rollups from the stored rows."

    def add_arguments(self, parser):
        parser.add_argument("suite", nargs="?", help="one suite (default: all)")

    def handle(self, suite=None, **options):
        suites = [get_suite(suite)] if suite else list(Suite.objects.all())
        for s in suites:
            rows = rebuild_rollups(s)
            self.stdout.write(f"{s.slug}: {rows} rollup rows rebuilt.")
