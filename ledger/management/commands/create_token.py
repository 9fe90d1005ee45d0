from django.core.management.base import BaseCommand

from ledger.tokens import token_create
from web.commands import get_suite


class Command(BaseCommand):
    help = "Create an API token for a suite. The token is printed once, alone on the last line."

    def add_arguments(self, parser):
        parser.add_argument("suite")
        parser.add_argument("--scope", choices=["read", "write"], required=True)
        parser.add_argument("--name", default="")

    def handle(self, suite, scope, name, **options):
        suite = get_suite(suite)
        token, raw = token_create(suite=suite, scope=scope, name=name, actor="manage.py")
        self.stderr.write(
            f"Created a {scope} token {token.prefix}… for {suite.slug}. "
            "It is shown once; store it now."
        )
        self.stdout.write(raw)
