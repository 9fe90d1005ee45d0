"""A PostgreSQL primary and its streaming replica of the test's own: ``initdb`` into a
temporary folder, served on a free port of 127.0.0.1, and a standby made from it with
``pg_basebackup`` on another; both stopped and removed after. It needs the server's
programs (``server_programs`` finds them, or says why not) and nothing of the PostgreSQL
the other tests use.

PostgreSQL refuses to run as root: as root, its programs run as the ``postgres`` user,
which then owns the folder."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.throwaway import free_port

PROGRAMS = ("initdb", "pg_ctl", "postgres", "pg_basebackup")
# Quick and small: a test's data need not survive a crash of the machine.
SERVER_SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "fsync": "off",
    "full_page_writes": "off",
    "shared_buffers": "'16MB'",
    "max_connections": "40",
    "wal_level": "replica",
    "max_wal_senders": "4",
}


def server_programs() -> tuple[Path | None, str]:
    """The folder of PostgreSQL's server programs, or None and why there is none."""
    if os.geteuid() == 0 and not _user("postgres"):
        return None, "running as root, and there is no postgres user to run PostgreSQL as"
    folders = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version, reverse=True)
    if found := shutil.which("pg_ctl"):
        folders.append(str(Path(found).resolve().parent))
    for folder in folders:
        if all((Path(folder) / name).exists() for name in PROGRAMS):
            return Path(folder), ""
    return None, f"PostgreSQL's server programs ({', '.join(PROGRAMS)}) are not installed"


def _version(folder: str) -> int:
    name = Path(folder).parent.name
    return int(name) if name.isdigit() else 0


def _user(name: str):
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


class Pair:
    """The primary and the standby: their ports, and SQL run on either."""

    def __init__(self, programs: Path, folder: Path):
        self.programs = programs
        self.folder = folder
        self.primary_port = free_port()
        self.standby_port = free_port()
        self.as_postgres = os.geteuid() == 0

    def run(self, program: str, *args: str) -> str:
        command = [str(self.programs / program), *args]
        if self.as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise AssertionError(f"{program} failed:\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def url(self, port: int, database: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{port}/{database}"

    def sql(self, port: int, query: str, params: tuple = ()):
        """The first column of the first row of ``query`` (None if it returns none), run
        in autocommit."""
        import psycopg

        with psycopg.connect(self.url(port), autocommit=True) as conn:
            cursor = conn.execute(query, params)
            row = cursor.fetchone() if cursor.description else None
        return row[0] if row else None

    def start(self, name: str, port: int) -> None:
        data = self.folder / name
        self.run("pg_ctl", "-D", str(data), "-l", str(self.folder / f"{name}.log"), "-w",
                 "-o", f"-p {port} -k {self.folder}", "start")

    def stop(self, name: str) -> None:
        self.run("pg_ctl", "-D", str(self.folder / name), "-m", "fast", "-w", "stop")

    def create(self) -> None:
        primary = self.folder / "primary"
        self.run("initdb", "-D", str(primary), "-U", "postgres", "-A", "trust", "--no-sync",
                 "-E", "UTF8", "--locale", "C")
        with (primary / "postgresql.conf").open("a") as conf:
            conf.writelines(f"{key} = {value}\n" for key, value in SERVER_SETTINGS.items())
        self.start("primary", self.primary_port)
        self.run("pg_basebackup", "-h", "127.0.0.1", "-p", str(self.primary_port),
                 "-U", "postgres", "-D", str(self.folder / "standby"), "-R", "-X", "stream",
                 "--no-sync")
        self.start("standby", self.standby_port)

    def replay(self, *, paused: bool) -> None:
        """Pause the standby's replay of the primary's changes, or resume it."""
        call = "pg_wal_replay_pause" if paused else "pg_wal_replay_resume"
        self.sql(self.standby_port, f"SELECT {call}()")

    def caught_up(self) -> None:
        """Wait until the standby has replayed everything the primary wrote so far."""
        target = self.sql(self.primary_port, "SELECT pg_current_wal_lsn()::text")
        query = "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn"
        for _ in range(600):
            if self.sql(self.standby_port, query, (target,)):
                return
            time.sleep(0.05)
        raise AssertionError("the standby did not catch up with the primary")


@contextmanager
def primary_and_standby() -> Iterator[Pair]:
    """A running primary and standby of the test's own, removed after."""
    programs, _ = server_programs()
    assert programs is not None
    folder = Path(tempfile.mkdtemp(prefix="flakeboard-pg-"))
    pair = Pair(programs, folder)
    if pair.as_postgres:
        postgres = _user("postgres")
        os.chown(folder, postgres.pw_uid, postgres.pw_gid)
    try:
        pair.create()
        yield pair
    finally:
        for name in ("standby", "primary"):
            if (folder / name / "postmaster.pid").exists():
                pair.run("pg_ctl", "-D", str(folder / name), "-m", "immediate", "-w", "stop")
        shutil.rmtree(folder, ignore_errors=True)
