"""What the upload commands share: ``ingest_report`` and ``ingest_signals`` are one
command over two ingest services, told apart by the metadata a bare list takes."""

from __future__ import annotations

import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from ledger.commands import get_suite
from runs.results import summary_lines
from runs.wire import UploadInvalid
from web.commands import read_upload


class IngestCommand(BaseCommand):
    """Ingest a file into a suite the way the API does, print the summary, exit with the
    upload's exit code. A subclass names its ``ingest`` service, the ``query_options`` a
    bare list's metadata comes from, and the ``actor`` its uploads are recorded by."""

    ingest = None  # report_ingest or signals_ingest, as a staticmethod
    query_options: tuple[str, ...] = ()
    actor = ""

    def add_arguments(self, parser):
        parser.add_argument("suite")
        parser.add_argument("file")
        for name in self.query_options:
            parser.add_argument(f"--{name}", default="")
        parser.add_argument("--dry-run", action="store_true", help="evaluate, store nothing")

    def handle(self, suite, file, dry_run, **options):
        suite = get_suite(suite)
        body = read_upload(file, settings.UPLOAD_MAX_BYTES)
        try:
            outcome = self.ingest(
                suite=suite, body=body, actor=self.actor, dry_run=dry_run,
                query={name: options[name] for name in self.query_options},
            )
        except UploadInvalid as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from None
        for line in summary_lines(outcome):
            self.stdout.write(line)
        if outcome.upload.exit_code:
            sys.exit(outcome.upload.exit_code)
