from django.conf import settings
from django.core.management.base import BaseCommand
from django.utils import timezone

from junit.prune import prune_junit


class Command(BaseCommand):
    help = (
        "Delete JUnit testcase results (and per-commit job counts) older than "
        "JUNIT_RETENTION_DAYS days; the files' counts and the per-day rollups are kept."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true",
                            help="count what would be deleted, delete nothing")

    def handle(self, dry_run, **options):
        days = settings.JUNIT_RETENTION_DAYS
        pruned = prune_junit(days=days, today=timezone.now().date(), dry_run=dry_run)
        verb = "Would delete" if dry_run else "Deleted"
        span = f"{days} day{'s' * (days != 1)}"
        self.stdout.write(f"{verb} {pruned.results} testcase results and "
                          f"{pruned.job_outcomes} job counts older than {span}.")
