"""What the apps' management commands share: a file read under the upload limit, a refusal
as one line, and the prune command's frame. The suite named on the command line is
``ledger.commands.get_suite``."""

from __future__ import annotations

from contextlib import nullcontext

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from flakeboard.rules import plural


def read_upload(path: str, limit: int) -> bytes:
    """The file's bytes; a CommandError when it cannot be read or is over ``limit``."""
    try:
        with open(path, "rb") as handle:
            body = handle.read(limit + 1)
    except OSError as exc:
        raise CommandError(f"Cannot read {path}: {exc.strerror}") from None
    if len(body) > limit:
        raise CommandError(f"{path} is over the upload limit of {limit} bytes.")
    return body


def one_line(error) -> str:
    """A ValidationError as one readable line."""
    if hasattr(error, "message_dict"):
        return "; ".join(f"{k}: {' '.join(v)}" for k, v in error.message_dict.items())
    return " ".join(getattr(error, "messages", [str(error)]))


class PruneCommand(BaseCommand):
    """A prune of raw rows older than a setting's days: ``prune(days=, today=, dry_run=)``
    answers the counts, ``said(pruned)`` words them after "Deleted" or "Would delete".
    ``lock(job)`` is the job's lock (a context manager that yields whether this run holds
    it; ``ledger.job_locks.job_lock``): started by cron on several hosts, one run deletes
    and the others say so."""

    setting = ""
    job = ""
    lock = None

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true",
                            help="count what would be deleted, delete nothing")

    def handle(self, dry_run, **options):
        days = getattr(settings, self.setting)
        # A dry run deletes nothing: it neither waits for a run nor holds one back.
        with nullcontext(True) if dry_run or not self.lock else self.lock(self.job) as held:
            if not held:
                self.stdout.write(f"Another {self.job} run holds the job: skipped (it "
                                  "deletes).")
                return
            pruned = self.prune(days=days, today=timezone.now().date(), dry_run=dry_run)
        verb = "Would delete" if dry_run else "Deleted"
        self.stdout.write(f"{verb} {self.said(pruned, plural(days, 'day'))}")
