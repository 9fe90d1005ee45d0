"""``manage.py backup PATH``: a consistent copy of a live board with more than a year of
history (tests/year.py), taken while uploads run, on the configured database: SQLite's
online backup API, or pg_dump restored by pg_restore into a fresh database. "Consistent"
is checked as: every report in the copy holds exactly its measurement_count rows and every
batch its record_count; the per-day rollups equal the counts recomputed from the raw rows
(both are written in one ingest transaction, so a torn copy would differ); and the ledger
served from the restored copy is byte for byte the one the live board serves. A backup
taken once the uploads stop restores every table's row count exactly."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time

import pytest
from django.core.management.base import CommandError

from ledger.management.commands import backup as command
from tests.throwaway import ROOT, Board, configured_backend
from tests.year import DAYS, PER_DAY

SETUP = """
import json
from datetime import timedelta
from django.utils import timezone
from ledger.quarantine import quarantine_create
from ledger.suites import suite_create
from tests.year import year_of_history
suite = suite_create(slug="acme", name="Acme")
suite.max_quarantined_share = 1.0
suite.save()
today = timezone.now().date()
year_of_history(suite, today)
for i in range(3):
    quarantine_create(suite=suite, nodeid=f"t.py::q{i}", owner="@finley", actor="@finley",
                      expires=today + timedelta(days=9), evidence=f"ci/run-{i}", today=today)
print(json.dumps("ok"))
"""

UPLOADS = """
import json, pathlib
from ledger.models import Suite
from runs.ingest import report_ingest, signals_ingest
suite, stop, i = Suite.objects.get(slug="acme"), pathlib.Path(%r), 0
while not stop.exists() or i < 5:
    rows = [{"nodeid": f"t.py::q{j %% 3}" if j < 3 else f"t.py::n{i}_{j}", "n": 200,
             "fails": (i + j) %% 4} for j in range(40)]
    report_ingest(suite=suite, body=json.dumps(rows).encode(), actor="ci")
    signals_ingest(suite=suite, actor="ci", body=json.dumps([
        {"node": f"t.py::n{i}_{j}", "property_check": "pass", "fixture_lock": "match",
         "flake_status": "stable"} for j in range(20)]).encode())
    i += 1
    pathlib.Path(%r).write_text(str(i))
print(json.dumps(i))
"""

CHECK = """
import json
from datetime import datetime, UTC
from django.db import connection
from django.db.models import Count
from ledger.api.ledger import served_ledger
from ledger.models import Suite
from runs.models import Report, VerdictBatch
from runs.rollups import counts_from_raw, counts_from_rollups
suite = Suite.objects.get(slug="acme")
now = datetime(2030, 1, 1, tzinfo=UTC)
torn = (list(Report.objects.annotate(c=Count("measurements")).exclude(c=F("measurement_count"))
             .values_list("pk", flat=True))
        + list(VerdictBatch.objects.annotate(c=Count("verdicts")).exclude(c=F("record_count"))
               .values_list("pk", flat=True)))
tables = connection.introspection.table_names()
with connection.cursor() as cursor:
    counts = {t: cursor.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables}
rollups_true = counts_from_raw(suite) == counts_from_rollups(suite)
print(json.dumps({"torn": torn, "rollups_true": rollups_true,
                  "ledger": served_ledger(suite, full=False, today=now.date(), now=now)[1].decode(),
                  "reports": Report.objects.count(), "counts": counts}))
""".replace("from django.db.models import Count", "from django.db.models import Count, F")
YEAR_REPORTS = DAYS * PER_DAY


def restored(board: Board, backup, tmp_path, label: str) -> dict:
    """CHECK's answer on a fresh database restored from ``backup``, as docs/operations.md
    restores: SQLite's copy put in the file's place, or pg_restore into a new PostgreSQL
    database."""
    env = dict(board.env)
    if board.backend == "sqlite":
        copy = tmp_path / f"{label}.sqlite3"
        shutil.copyfile(backup, copy)
        board.env["DATABASE_URL"] = f"sqlite:///{copy}"
    else:
        name = f"{board.db_name}_{label}"
        board._admin(f'CREATE DATABASE "{name}"')
        board.env["DATABASE_URL"] = board.database_url.rsplit("/", 1)[0] + f"/{name}"
    try:
        if board.backend == "postgresql":
            subprocess.run(["pg_restore", "--no-owner", "--exit-on-error",
                            f"--dbname={board.env['DATABASE_URL']}", str(backup)],
                           check=True, capture_output=True, text=True, timeout=600)
        board.manage("migrate", "--check")
        return board.run(CHECK)
    finally:
        board.env = env
        if board.backend == "postgresql":
            board._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def board(tmp_path):
    backend = configured_backend()
    if backend == "postgresql":
        missing = [tool for tool in ("pg_dump", "pg_restore") if shutil.which(tool) is None]
        if missing:
            pytest.skip(f"{' and '.join(missing)} not on PATH (postgresql-client)")
    board = Board(tmp_path, backend)
    try:
        board.run(SETUP)
        yield board
    finally:
        board.close()


@pytest.mark.slow
def test_a_backup_taken_during_uploads_restores_a_consistent_board(board, tmp_path):
    stop, progress = tmp_path / "stop", tmp_path / "progress"
    uploads = subprocess.Popen(
        [sys.executable, "manage.py", "shell", "-c", UPLOADS % (str(stop), str(progress))],
        cwd=ROOT, env=board.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(600):  # until the uploads are under way
            if progress.exists() and int(progress.read_text() or 0) >= 2:
                break
            assert uploads.poll() is None, uploads.communicate()[1]
            time.sleep(0.1)
        backup = tmp_path / "backup.dump"
        assert "Backed up" in board.manage("backup", str(backup)).stdout
    finally:
        stop.touch()
        out, err = uploads.communicate(timeout=600)
    assert uploads.returncode == 0, err
    live = board.run(CHECK)
    assert live["torn"] == [] and live["rollups_true"]

    again = restored(board, backup, tmp_path, "during")
    assert again["torn"] == [] and again["rollups_true"]
    assert 2 <= again["reports"] - YEAR_REPORTS < live["reports"] - YEAR_REPORTS == json.loads(
        out.strip().splitlines()[-1])
    assert again["ledger"] == live["ledger"]  # uploads never change the served ledger
    assert set(again["counts"]) == set(live["counts"])
    assert all(again["counts"][t] <= live["counts"][t] for t in live["counts"])

    refused = board.manage("backup", str(backup), check=False)
    assert refused.returncode != 0 and "--force" in refused.stderr
    assert board.manage("backup", str(backup), "--force").returncode == 0
    at_rest = restored(board, backup, tmp_path, "at_rest")
    assert at_rest["counts"] == live["counts"]
    assert at_rest["ledger"] == live["ledger"]


class Ran:
    """subprocess.run's stand-in: keeps the command and environment it was given."""

    def __call__(self, args, env, **kwargs):
        self.args, self.env = args, env
        return subprocess.CompletedProcess(args, 0, "", "")


def test_pg_dump_gets_the_password_in_its_environment_only(monkeypatch, tmp_path):
    ran = Ran()
    monkeypatch.setattr(command.shutil, "which", lambda tool: f"/usr/bin/{tool}")
    monkeypatch.setattr(command.subprocess, "run", ran)
    command.pg_dump({"NAME": "flakeboard", "USER": "board", "PASSWORD": "s3cret pass",
                     "HOST": "db.internal", "PORT": 5433}, tmp_path / "x.dump")
    assert ran.args == ["pg_dump", "--format=custom", f"--file={tmp_path / 'x.dump'}",
                        "--no-password", "--host=db.internal", "--port=5433",
                        "--username=board", "--", "flakeboard"]
    assert ran.env["PGPASSWORD"] == "s3cret pass"
    assert not [arg for arg in ran.args if "s3cret" in arg]


def test_without_pg_dump_the_backup_is_refused(monkeypatch, tmp_path):
    monkeypatch.setattr(command.shutil, "which", lambda tool: None)
    with pytest.raises(CommandError, match="pg_dump is not on PATH"):
        command.pg_dump({"NAME": "flakeboard"}, tmp_path / "x.dump")
