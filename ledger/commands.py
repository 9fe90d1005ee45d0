"""The suite a management command names on its command line (``get_suite``, and the frame
of a command about one suite), and the prune commands' frame."""

from __future__ import annotations

from contextlib import nullcontext

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from flakeboard.rules import plural
from web.commands import one_line

from .job_locks import job_lock
from .models import Suite


def get_suite(slug: str) -> Suite:
    suite = Suite.objects.filter(slug=slug).first()
    if suite is None:
        raise CommandError(f"No suite “{slug}”. Create it with: manage.py create_suite {slug}")
    return suite


class SuiteCommand(BaseCommand):
    """A command about one suite, its slug the first argument: ``handle`` gets the Suite
    itself (none of that slug is a CommandError), and a service's refusal (ValidationError)
    ends the command as a CommandError of one line. A subclass's ``add_arguments`` adds its
    own after ``super().add_arguments(parser)``."""

    def add_arguments(self, parser):
        parser.add_argument("suite")

    def execute(self, *args, **options):
        options["suite"] = get_suite(options["suite"])
        try:
            return super().execute(*args, **options)
        except ValidationError as exc:
            raise CommandError(one_line(exc)) from None


class PruneCommand(BaseCommand):
    """A prune of raw rows older than a setting's days: ``prune(days=, today=, dry_run=)``
    answers the counts, ``said`` words them after "Deleted" or "Would delete" (a format of
``pruned`` and ``span``, the setting's days).
    Started by cron on several hosts, one run deletes and the others say so: the job's lock
    (``job_locks``) is named after the command."""

    setting = ""
    said = ""

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true",
                            help="count what would be deleted, delete nothing")

    def handle(self, dry_run, **options):
        days = getattr(settings, self.setting)
        job = self.__module__.rpartition(".")[2]  # prune, prune_junit
        # A dry run deletes nothing: it neither waits for a run nor holds one back.
        with nullcontext(True) if dry_run else job_lock(job) as held:
            if not held:
                self.stdout.write(f"Another {job} run holds the job: skipped (it deletes).")
                return
            pruned = self.prune(days=days, today=timezone.now().date(), dry_run=dry_run)
        verb = "Would delete" if dry_run else "Deleted"
        said = self.said.format(pruned=pruned, span=plural(days, "day"))
        self.stdout.write(f"{verb} {said}")
