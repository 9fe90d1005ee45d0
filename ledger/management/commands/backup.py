"""A consistent copy of the live SQLite database, through SQLite's online backup API: the
copy is one snapshot, taken while the board keeps serving (a file copy of a database being
written, or of its WAL, can be torn). PostgreSQL has pg_dump for this."""

import os
import sqlite3
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import connection


class Command(BaseCommand):
    help = "Write a consistent copy of the live SQLite database to PATH (PostgreSQL: pg_dump -Fc)."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--force", action="store_true", help="replace an existing PATH")

    def handle(self, path: Path, force: bool, **options):
        if connection.vendor != "sqlite":
            raise CommandError(
                f"backup copies SQLite databases; this board runs on {connection.vendor}. "
                "Use pg_dump -Fc (and pg_restore to restore): see the README's Operations.")
        source = connection.settings_dict["NAME"]
        if str(source) == ":memory:" or "mode=memory" in str(source):
            raise CommandError("The database is in memory: there is no file to back up.")
        if path.exists() and not force:
            raise CommandError(f"{path} exists; pass --force to replace it.")
        partial = path.with_name(f".{path.name}.partial")
        partial.unlink(missing_ok=True)
        src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
        dst = sqlite3.connect(partial)
        try:
            src.backup(dst)  # all pages in one step: one read snapshot of the source
            if dst.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
                raise CommandError("The copy failed SQLite's integrity check.")
        finally:
            dst.close()
            src.close()
        os.replace(partial, path)  # a backup at PATH is whole, never half written
        self.stdout.write(f"Backed up {source} to {path} ({path.stat().st_size} bytes).")
