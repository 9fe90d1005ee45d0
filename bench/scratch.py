"""Scratch databases for the benchmarks: migrated once per backend into a template, then
copied for each benchmark, and removed at the end.

SQLite: files in a temporary directory. PostgreSQL: databases named
``flakeboard_bench_<pid>_*`` on the server DATABASE_URL names, created from a migrated
template and dropped afterwards. The process id keeps two runs on one server (a bench and
the bench smoke test, say) out of each other's databases.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
PG_SCHEMES = ("postgres", "postgresql", "pgsql", "postgis")
SQLITE_SUFFIXES = ("", "-wal", "-shm")
PREFIX = "flakeboard_bench"


def is_postgres(url: str | None) -> bool:
    return bool(url) and urlsplit(url).scheme in PG_SCHEMES


def _migrate(url: str, env: dict) -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT, env={**env, "DATABASE_URL": url}, capture_output=True, text=True,
        timeout=600, check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"migrate failed on {redact(url)}:\n{done.stderr[-3000:]}")


def redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        host = parts.hostname or ""
        netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
        parts = parts._replace(netloc=netloc)
    return urlunsplit(parts)


class SqliteScratch:
    name = "sqlite"

    def __init__(self, workdir: Path, env: dict):
        self.dir = workdir / "sqlite"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.template = self.dir / "template.sqlite3"
        _migrate(f"sqlite:///{self.template}", env)

    def version(self) -> str:
        import sqlite3

        return sqlite3.sqlite_version

    def create(self, label: str) -> str:
        path = self.dir / f"{label}.sqlite3"
        for suffix in SQLITE_SUFFIXES:
            source = Path(f"{self.template}{suffix}")
            if source.exists():
                shutil.copyfile(source, f"{path}{suffix}")
        return f"sqlite:///{path}"

    def drop(self, url: str) -> None:
        path = urlsplit(url).path
        for suffix in SQLITE_SUFFIXES:
            Path(f"{path}{suffix}").unlink(missing_ok=True)

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


class PostgresScratch:
    name = "postgresql"

    def __init__(self, server_url: str, workdir: Path, env: dict):
        import psycopg

        self.psycopg = psycopg
        self.server = urlsplit(server_url)._replace(scheme="postgresql")
        self.created: list[str] = []
        self.prefix = f"{PREFIX}_{os.getpid()}"
        self.template = f"{self.prefix}_template"
        self._execute(f'DROP DATABASE IF EXISTS "{self.template}" WITH (FORCE)')
        self._execute(f'CREATE DATABASE "{self.template}"')
        self.created.append(self.template)
        _migrate(self._url(self.template), env)

    def _url(self, dbname: str) -> str:
        return urlunsplit(self.server._replace(path=f"/{dbname}", query=""))

    def _execute(self, sql: str) -> None:
        with self.psycopg.connect(self._url("postgres"), autocommit=True) as conn:
            conn.execute(sql)

    def version(self) -> str:
        with self.psycopg.connect(self._url("postgres"), autocommit=True) as conn:
            return conn.execute("SHOW server_version").fetchone()[0]

    def create(self, label: str) -> str:
        dbname = f"{self.prefix}_{label.lower()}"
        self._execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
        self._execute(f'CREATE DATABASE "{dbname}" TEMPLATE "{self.template}"')
        self.created.append(dbname)
        return self._url(dbname)

    def drop(self, url: str) -> None:
        dbname = urlsplit(url).path.lstrip("/")
        self._execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
        if dbname in self.created:
            self.created.remove(dbname)

    def close(self) -> None:
        for dbname in list(reversed(self.created)):
            self._execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
        self.created.clear()

