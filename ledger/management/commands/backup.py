"""A consistent copy of the live database, taken while the board keeps serving. SQLite: its
online backup API (a file copy of a database being written, or of its WAL, can be torn).
PostgreSQL: ``pg_dump -Fc`` (one snapshot), run with Django's connection settings, the
password passed in PGPASSWORD only; restore it with ``pg_restore``."""

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import connection


def pg_dump(settings: dict, path: Path) -> None:
    """Dump the database ``settings`` (a DATABASES entry) to ``path`` in pg_dump's custom
    format; a CommandError with pg_dump's own message when it fails."""
    if shutil.which("pg_dump") is None:
        raise CommandError("pg_dump is not on PATH: install PostgreSQL's client programs "
                           "(Debian: postgresql-client) of the server's major version or later.")
    command = ["pg_dump", "--format=custom", f"--file={path}", "--no-password"]
    for option, key in (("--host", "HOST"), ("--port", "PORT"), ("--username", "USER")):
        if settings.get(key):
            command.append(f"{option}={settings[key]}")
    env = {**os.environ, "PGPASSWORD": str(settings.get("PASSWORD") or "")}
    if sslmode := settings.get("OPTIONS", {}).get("sslmode"):
        env["PGSSLMODE"] = sslmode
    done = subprocess.run([*command, "--", settings["NAME"]], env=env, capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise CommandError(f"pg_dump failed: {done.stderr.strip()}")


def sqlite_backup(source: str, path: Path) -> None:
    if source == ":memory:" or "mode=memory" in source:
        raise CommandError("The database is in memory: there is no file to back up.")
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    dst = sqlite3.connect(path)
    try:
        src.backup(dst)  # all pages in one step: one read snapshot of the source
        if dst.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
            raise CommandError("The copy failed SQLite's integrity check.")
    finally:
        dst.close()
        src.close()


class Command(BaseCommand):
    help = ("Write a consistent copy of the live database to PATH: SQLite through its online "
            "backup API, PostgreSQL through pg_dump -Fc (restore with pg_restore).")

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--force", action="store_true", help="replace an existing PATH")

    def handle(self, path: Path, force: bool, **options):
        if connection.vendor not in ("sqlite", "postgresql"):
            raise CommandError(f"backup copies SQLite and PostgreSQL databases, not "
                               f"{connection.vendor}.")
        if path.exists() and not force:
            raise CommandError(f"{path} exists; pass --force to replace it.")
        source = str(connection.settings_dict["NAME"])
        partial = path.with_name(f".{path.name}.partial")
        partial.unlink(missing_ok=True)
        try:
            if connection.vendor == "postgresql":
                pg_dump(connection.settings_dict, partial)
            else:
                sqlite_backup(source, partial)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        os.replace(partial, path)  # a backup at PATH is whole, never half written
        self.stdout.write(f"Backed up {source} to {path} ({path.stat().st_size} bytes).")
