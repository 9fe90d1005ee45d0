from django.conf import settings
from django.core.management.base import CommandError
from django.utils import timezone

from flakeboard import rules
from ledger.commands import SuiteCommand
from ledger.ledger_file import LedgerFileError, describe, import_ledger, read_ledger
from web.commands import read_upload


def _shown(nodeid: str) -> str:
    # A node id with a line break or an escape sequence would garble the one-line listing;
    # such an id is refused anyway, so it is shown quoted.
    return nodeid if nodeid and not rules.has_control_chars(nodeid) else repr(nodeid)


class Command(SuiteCommand):
    help = (
        "Import a flake_ledger.json. Rows pass the same rules as the form, except that an "
        "entry already expired (or expiring today) is kept and the share cap only warns. "
        "The whole file is checked first and every refused row is named with its field. "
        "By default nothing is stored if any row is refused; with --keep-valid the valid "
        "rows are stored. Exits 1 if any row was refused."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("file")
        parser.add_argument(
            "--keep-valid", action="store_true",
            help="Store the rows that pass even if others are refused (still exits 1).",
        )

    def handle(self, suite, file, keep_valid=False, **options):
        raw = read_upload(file, settings.UPLOAD_MAX_BYTES)
        try:
            pairs = read_ledger(raw)
        except LedgerFileError as exc:
            raise CommandError(f"{file}: {exc}") from None

        outcome = import_ledger(
            suite=suite, pairs=pairs, actor="manage.py import_ledger",
            today=timezone.now().date(), keep_valid=keep_valid,
        )
        for warning in outcome.warnings:
            self.stderr.write(f"Warning: {warning}")
        for nodeid, errors in outcome.refused:
            self.stderr.write(f"Refused {_shown(nodeid)}: {describe(errors)}")
        refused = len(outcome.refused)
        if not outcome.stored:
            raise CommandError(
                f"{refused} of {outcome.rows} row(s) refused; nothing was imported. Fix them "
                "and run again, or pass --keep-valid to import the others."
            )
        created = len(outcome.created)
        self.stdout.write(
            f"Imported {rules.plural(created, 'entry', 'entries')}, refused {refused}."
        )
        if refused:
            raise CommandError(
                f"{refused} row(s) refused and not imported; {created} imported. Import the "
                "corrected rows alone: the imported nodes now have open entries."
            )
