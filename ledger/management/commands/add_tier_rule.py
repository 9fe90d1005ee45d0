from flakeboard import rules
from ledger.commands import SuiteCommand
from ledger.tiers import tier_rule_add


class Command(SuiteCommand):
    help = "Add a tier rule: node ids matching GLOB (fnmatch) are of tier TIER."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("glob", help="e.g. 'tests/test_properties.py::*'")
        parser.add_argument("tier", type=int, choices=[0, 1, 2])

    def handle(self, suite, glob, tier, **options):
        rule = tier_rule_add(suite=suite, glob=glob, tier=tier, actor="manage.py")
        violations = suite.entries.violating().count()
        self.stdout.write(f"Added tier rule {rule.glob} → {rule.tier}.")
        if violations:
            self.stderr.write(
                f"Warning: {rules.plural(violations, 'open entry is', 'open entries are')} "
                "now tier violations: they leave the served ledger and fail the gate."
            )
