"""``manage.py backup PATH``: a consistent copy of a live SQLite board, taken while uploads
run, through SQLite's online backup API. "Consistent" is checked as: the copy passes
SQLite's integrity check; every report in it holds exactly its measurement_count rows and
every batch its record_count; the per-day rollups equal the counts recomputed from the raw
rows (both are written in one ingest transaction, so a torn copy would differ); and the
ledger served from the restored copy is byte for byte the one the live board serves."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.throwaway import ROOT, Board

SETUP = """
import json
from datetime import timedelta
from django.utils import timezone
from ledger.quarantine import quarantine_create
from ledger.suites import suite_create
suite = suite_create(slug="acme", name="Acme")
suite.max_quarantined_share = 1.0
suite.save()
today = timezone.now().date()
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


def test_a_backup_taken_during_uploads_restores_a_consistent_board(tmp_path):
    board = Board(tmp_path, "sqlite")
    board.run(SETUP)
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
        backup = tmp_path / "backup.sqlite3"
        assert "Backed up" in board.manage("backup", str(backup)).stdout
    finally:
        stop.touch()
        out, err = uploads.communicate(timeout=600)
    assert uploads.returncode == 0, err
    live = board.run(CHECK)

    restored = tmp_path / "restored.sqlite3"
    shutil.copyfile(backup, restored)  # the README's restore: the copy in the file's place
    board.env["DATABASE_URL"] = f"sqlite:///{restored}"
    board.manage("migrate", "--check")
    again = board.run(CHECK)
    assert again["torn"] == [] and again["rollups_true"]
    assert 2 <= again["reports"] < live["reports"] == json.loads(out.strip().splitlines()[-1])
    assert again["ledger"] == live["ledger"]  # uploads never change the served ledger
    assert set(again["counts"]) == set(live["counts"])
    assert all(again["counts"][t] <= live["counts"][t] for t in live["counts"])

    refused = board.manage("backup", str(backup), check=False)
    assert refused.returncode != 0 and "--force" in refused.stderr
    assert board.manage("backup", str(backup), "--force").returncode == 0


@pytest.mark.django_db
def test_postgresql_is_pointed_to_pg_dump(monkeypatch, tmp_path):
    from django.db import connection

    monkeypatch.setattr(connection, "vendor", "postgresql")
    with pytest.raises(CommandError, match="pg_dump"):
        call_command("backup", str(tmp_path / "x"))
