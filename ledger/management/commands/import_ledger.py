import json

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from ledger.management import get_suite, one_line
from ledger.quarantine import ledger_import


class Command(BaseCommand):
    help = (
        "Import a flake_ledger.json. Rows pass the same rules as the form, except that an "
        "already-expired entry is kept as expired and the share cap only warns. A refused "
        "row is named with its reason and nothing of it is stored."
    )

    def add_arguments(self, parser):
        parser.add_argument("suite")
        parser.add_argument("file")

    def handle(self, suite, file, **options):
        suite = get_suite(suite)
        limit = settings.UPLOAD_MAX_BYTES
        try:
            with open(file, "rb") as handle:
                raw = handle.read(limit + 1)
        except OSError as exc:
            raise CommandError(f"Cannot read {file}: {exc.strerror}") from None
        if len(raw) > limit:
            raise CommandError(f"{file} is over the upload limit of {limit} bytes.")
        try:
            data = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            raise CommandError(f"{file} is not valid JSON: {exc}") from None
        try:
            result = ledger_import(
                suite=suite, ledger=data, actor="manage.py import_ledger",
                today=timezone.now().date(),
            )
        except ValidationError as exc:
            raise CommandError(one_line(exc)) from None
        for warning in result.warnings:
            self.stderr.write(f"Warning: {warning}")
        for nodeid, why in result.refused:
            self.stderr.write(f"Refused {nodeid}: {why}")
        self.stdout.write(
            f"Imported {len(result.created)} entr{'y' if len(result.created) == 1 else 'ies'}"
            f", refused {len(result.refused)}."
        )
        if result.refused:
            raise CommandError(f"{len(result.refused)} row(s) refused; nothing of them stored.")
