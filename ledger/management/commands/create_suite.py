from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from ledger.suites import suite_create
from web.commands import one_line


class Command(BaseCommand):
    help = "Create a suite (one repository's test suite)."

    def add_arguments(self, parser):
        parser.add_argument("slug", help="the suite's slug in URLs (letters, digits, - and _)")
        parser.add_argument("--name", default="", help="a readable name")

    def handle(self, slug, name, **options):
        try:
            suite = suite_create(slug=slug, name=name)
        except ValidationError as exc:
            raise CommandError(one_line(exc)) from None
        self.stdout.write(f"Created suite {suite.slug}.")
