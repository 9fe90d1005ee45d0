"""manage.py set_codeowners SUITE PATH: the suite's CODEOWNERS, from a file or stdin."""

from __future__ import annotations

import sys

from django.core.management.base import CommandError

from flakeboard import rules
from ledger.codeowners import codeowners_saved, codeowners_set
from ledger.commands import SuiteCommand
from web.commands import read_upload


class Command(SuiteCommand):
    help = (
        "Set the suite's CODEOWNERS (each node's default owners), as the settings page and "
        "PUT /api/v1/suites/SUITE/codeowners do: read from PATH, or from stdin with '-'. "
        "An empty file removes it; a file with a line that does not parse changes nothing."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("path", help="the CODEOWNERS file, or - for stdin")

    def handle(self, *args, suite, path, **options):
        limit = rules.CODEOWNERS_MAX_BYTES
        if path == "-":
            raw = sys.stdin.buffer.read(limit + 1)
            if len(raw) > limit:
                raise CommandError(f"stdin is over {limit} bytes, the most GitHub reads.")
        else:
            raw = read_upload(path, limit)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise CommandError(f"{path} is not UTF-8 text.") from None
        parsed = codeowners_set(suite=suite, text=text, actor="manage.py")
        self.stdout.write(f"{suite.slug}: {codeowners_saved(parsed)}")
