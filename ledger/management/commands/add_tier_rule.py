from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from flakeboard import rules
from ledger.commands import get_suite
from ledger.tiers import tier_rule_add
from web.commands import one_line


class Command(BaseCommand):
    help = "Add a tier rule: node ids matching GLOB (fnmatch) are of tier TIER."

    def add_arguments(self, parser):
        parser.add_argument("suite")
        parser.add_argument("glob", help="e.g. 'tests/test_properties.py::*'")
        parser.add_argument("tier", type=int, choices=[0, 1, 2])

    def handle(self, suite, glob, tier, **options):
        suite = get_suite(suite)
        try:
            rule = tier_rule_add(suite=suite, glob=glob, tier=tier, actor="manage.py")
        except ValidationError as exc:
            raise CommandError(one_line(exc)) from None
        violations = suite.entries.violating().count()
        self.stdout.write(f"Added tier rule {rule.glob} → {rule.tier}.")
        if violations:
            self.stderr.write(
                f"Warning: {rules.plural(violations, 'open entry is', 'open entries are')} "
                "now tier violations: they leave the served ledger and fail the gate."
            )
