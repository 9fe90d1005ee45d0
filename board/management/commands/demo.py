from django.core.management.base import BaseCommand
from django.utils import timezone

from board.demo import DAYS, DEMO_PASSWORD, build_demo
from ledger.models import Suite


class Command(BaseCommand):
    help = (
        f"Load the demo suite: {DAYS} days of history, tier rules, entries in every state, "
        "and lead, owner and viewer accounts. Does nothing if the demo suite exists."
    )

    def handle(self, **options):
        if Suite.objects.filter(slug="demo").exists():
            if options["verbosity"]:
                self.stdout.write("The demo suite is already loaded.")
            return
        suite = build_demo(timezone.now().date())
        if options["verbosity"]:
            self.stdout.write(
                f"Loaded the demo suite: {suite.reports.count()} reports, "
                f"{suite.batches.count()} verdict batches, {suite.entries.count()} entries. "
                f"Sign in as lead, owner or viewer with the password {DEMO_PASSWORD}."
            )
