import json

from ledger.commands import SuiteCommand
from ledger.selectors import ledger_for_gate


class Command(SuiteCommand):
    help = "Export the served ledger as flake_ledger.json (stdout, or -o FILE)."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("-o", "--output", help="write to this file instead of stdout")

    def handle(self, suite, output, **options):
        text = json.dumps(ledger_for_gate(suite), indent=2) + "\n"
        if output:
            with open(output, "w", encoding="utf-8") as handle:
                handle.write(text)
            self.stderr.write(f"Wrote {output}.")
        else:
            self.stdout.write(text, ending="")
