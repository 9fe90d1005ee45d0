from django.core.management.base import CommandError
from django.utils.dateparse import parse_date, parse_datetime

from ledger.commands import SuiteCommand
from ledger.tokens import token_create, token_expiry


class Command(SuiteCommand):
    help = "Create an API token for a suite. The token is printed once, alone on the last line."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--scope", choices=["read", "write"], required=True)
        parser.add_argument("--name", default="")
        parser.add_argument(
            "--expires", default=None, metavar="DATE",
            help="The last day the token works (YYYY-MM-DD, UTC), or the instant it stops "
                 "(an ISO datetime with its offset). Default: it never expires.",
        )
        parser.add_argument(
            "--default-branch-only", action="store_true",
            help="A write token for the default branch's CI jobs alone (keep it as a "
                 "protected variable): only such a token's JUnit sizes the test set "
                 "(docs/trusted-ci.md).",
        )

    def handle(self, suite, scope, name, expires, default_branch_only, **options):
        token, raw = token_create(
            suite=suite, scope=scope, name=name, actor="manage.py",
            expires_at=None if expires is None else _expiry(expires),
            default_branch_only=default_branch_only,
        )
        self.stderr.write(
            f"Created a {scope} token {token.prefix}… for {suite.slug}"
            + (f", for {suite.default_branch} only. " if default_branch_only else ". ") +
            "It is shown once; store it now."
        )
        self.stdout.write(raw)


def _expiry(text: str):
    try:
        day, moment = parse_date(text), parse_datetime(text)
    except ValueError:  # well formed, but no such day or time
        day = moment = None
    if day is not None:
        return token_expiry(day)
    if moment is None or moment.tzinfo is None:
        raise CommandError(
            f"--expires {text!r}: give a date (YYYY-MM-DD) or an ISO datetime with its offset."
        )
    return moment
