import sys

from django.conf import settings
from django.core.management.base import BaseCommand

from ledger.management import get_suite
from runs.ingest import signals_ingest
from runs.management import read_upload, upload_error
from runs.results import summary_lines
from runs.validation import UploadInvalid


class Command(BaseCommand):
    help = "Ingest a file of signal records and arbitrate it; exits 0 accept, 1 reject, 2 hold."

    def add_arguments(self, parser):
        parser.add_argument("suite")
        parser.add_argument("file")
        parser.add_argument("--patch", default="")
        parser.add_argument("--commit", default="")
        parser.add_argument("--evidence", default="")
        parser.add_argument("--dry-run", action="store_true", help="evaluate, store nothing")

    def handle(self, suite, file, patch, commit, evidence, dry_run, **options):
        suite = get_suite(suite)
        body = read_upload(file, settings.UPLOAD_MAX_BYTES)
        try:
            outcome = signals_ingest(
                suite=suite, body=body, actor="manage.py ingest_signals", dry_run=dry_run,
                query={"patch": patch, "commit": commit, "evidence": evidence},
            )
        except UploadInvalid as exc:
            raise upload_error(exc) from None
        for line in summary_lines(outcome):
            self.stdout.write(line)
        if outcome.upload.exit_code:
            sys.exit(outcome.upload.exit_code)
