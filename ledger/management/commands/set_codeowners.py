"""manage.py set_codeowners SUITE PATH: the suite's CODEOWNERS, from a file or stdin."""

from __future__ import annotations

import sys

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from flakeboard import rules
from ledger.codeowners import codeowners_saved, codeowners_set
from ledger.commands import get_suite
from web.commands import one_line, read_upload


class Command(BaseCommand):
    help = (
        "Set the suite's CODEOWNERS (each node's default owners), as the settings page and "
        "PUT /api/v1/suites/SUITE/codeowners do: read from PATH, or from stdin with '-'. "
        "An empty file removes it; a file with a line that does not parse changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("suite")
        parser.add_argument("path", help="the CODEOWNERS file, or - for stdin")

    def handle(self, *args, suite, path, **options):
        suite = get_suite(suite)
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
        try:
            parsed = codeowners_set(suite=suite, text=text, actor="manage.py")
        except ValidationError as exc:
            raise CommandError(one_line(exc)) from None
        self.stdout.write(f"{suite.slug}: {codeowners_saved(parsed)}")
