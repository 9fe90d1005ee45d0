"""Crash safety: a 100,000-record signals ingest is killed with SIGKILL in the middle of
writing its rows. Afterwards the database holds no part of that batch, no orphan rows and
no rollup drift, and the board ingests the next upload as usual.

The board runs on a database of its own: an SQLite file in WAL mode, and PostgreSQL too
when DATABASE_URL is PostgreSQL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import pytest

from tests.throwaway import ROOT, Board, configured_backend

pytestmark = pytest.mark.slow

RECORDS = 100_000
KILL_AFTER_ROWS = 10_000

SEED = """
import json
from ledger.suites import suite_create
from runs.ingest import report_ingest, signals_ingest
suite = suite_create(slug="acme", name="Acme")
record = {"property_check": "pass", "fixture_lock": "match", "flake_status": "stable",
          "fixture_manifest": "sha256:a1"}
signals_ingest(suite=suite, actor="ci", body=json.dumps(
    [{**record, "node": f"tests/test_seed.py::test_{i}"} for i in range(50)]).encode())
report_ingest(suite=suite, actor="ci", body=json.dumps(
    [{"nodeid": f"tests/test_seed.py::test_{i}", "n": 200, "fails": i % 3}
     for i in range(50)]).encode())
print(json.dumps(True))
"""

# Runs the real command; once KILL_AFTER_ROWS verdict rows are written (inside the ingest's
# transaction, which writes them in chunks through web.bulk.insert_chunked: COPY on
# PostgreSQL, executemany on SQLite), it says so and waits to be killed.
INGEST_AND_WAIT = """
import threading
from django.core.management import call_command
import web.bulk
from runs.models import NodeVerdict
insert = web.bulk.insert_plain
written = [0]
def count_rows(model, attnames, rows):
    insert(model, attnames, rows)
    if model is NodeVerdict:
        written[0] += len(rows)
        if written[0] >= %(kill_after)d:
            print("MID-WRITE", written[0], flush=True)
            threading.Event().wait()
web.bulk.insert_plain = count_rows
call_command("ingest_signals", "acme", %(path)r)
print("FINISHED", flush=True)
"""

STATE = """
import json
from django.apps import apps
from django.db import connection
from ledger.models import Node, Suite
from runs.models import Measurement, NodeVerdict, Report, VerdictBatch
from runs.rollups import counts_from_raw, counts_from_rollups
suite = Suite.objects.get(slug="acme")
orphans = {
    "verdicts without a batch": NodeVerdict.objects.exclude(
        batch__in=VerdictBatch.objects.all()).count(),
    "measurements without a report": Measurement.objects.exclude(
        report__in=Report.objects.all()).count(),
    "nodes never uploaded nor quarantined": Node.objects.filter(
        verdicts__isnull=True, measurements__isnull=True, entries__isnull=True).count(),
    "batches short of rows": sum(b.verdicts.count() != b.record_count
                                 for b in VerdictBatch.objects.all()),
}
integrity = "ok"
if connection.vendor == "sqlite":
    with connection.cursor() as cursor:
        integrity = cursor.execute("PRAGMA integrity_check").fetchone()[0]
print(json.dumps({
    "tables": {m._meta.label: m.objects.count() for m in apps.get_models()},
    "orphans": orphans,
    "rollups_match": counts_from_raw(suite) == counts_from_rollups(suite),
    "rollups": len(counts_from_rollups(suite)),
    "integrity": integrity,
}))
"""


@pytest.fixture(params=["sqlite", "postgresql"])
def board(request, tmp_path):
    if request.param == "postgresql" and configured_backend() != "postgresql":
        pytest.skip("the PostgreSQL run needs DATABASE_URL to be PostgreSQL")
    board = Board(tmp_path, request.param)
    try:
        board.run(SEED)
        yield board
    finally:
        board.close()


def big_upload(path) -> None:
    records = [
        {"node": f"tests/test_big_{i // 100}.py::test_{i}", "property_check": "pass",
         "fixture_lock": "match", "flake_status": "stable", "fixture_manifest": "sha256:a1",
         "seed": i}
        for i in range(RECORDS)
    ]
    path.write_text(json.dumps(records))


WATCHDOG_SECONDS = 600


def test_a_killed_ingest_leaves_no_trace(board, tmp_path):
    before = board.run(STATE)
    assert before["rollups_match"] and before["tables"]["runs.VerdictBatch"] == 1

    path = tmp_path / "signals.json"
    big_upload(path)
    ingest = subprocess.Popen(
        [sys.executable, "manage.py", "shell", "-c",
         INGEST_AND_WAIT % {"kill_after": KILL_AFTER_ROWS, "path": str(path)}],
        cwd=ROOT, env=board.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    said = []
    # A driver that never reaches the write (a lock held elsewhere, say) fails the test
    # instead of hanging it: the watchdog kills it, the loop ends, the assertions speak.
    watchdog = threading.Timer(WATCHDOG_SECONDS, ingest.kill)
    watchdog.start()
    try:
        for line in ingest.stdout:  # until the driver says it is mid-write, or exits
            said.append(line)
            if line.startswith("MID-WRITE"):
                os.kill(ingest.pid, signal.SIGKILL)
                break
    finally:
        watchdog.cancel()
        ingest.kill()
        ingest.wait(timeout=60)
        said.append(ingest.stderr.read())
        ingest.stdout.close()
        ingest.stderr.close()
    assert said[-2].startswith("MID-WRITE"), "".join(said)
    assert int(said[-2].split()[1]) >= KILL_AFTER_ROWS
    assert ingest.returncode == -signal.SIGKILL

    after = board.run(STATE)
    assert after["tables"] == before["tables"], "the killed batch left rows behind"
    assert all(count == 0 for count in after["orphans"].values()), after["orphans"]
    assert after["rollups_match"] and after["rollups"] == before["rollups"]
    assert after["integrity"] == "ok"

    # The board carries on: the next upload is stored whole, with its rollups.
    small = tmp_path / "next.json"
    small.write_text(json.dumps([{"node": "tests/test_next.py::test_ok",
                                  "property_check": "pass", "fixture_lock": "match",
                                  "flake_status": "stable", "fixture_manifest": "sha256:a1"}]))
    board.manage("ingest_signals", "acme", str(small))
    final = board.run(STATE)
    assert final["tables"]["runs.VerdictBatch"] == before["tables"]["runs.VerdictBatch"] + 1
    assert final["tables"]["runs.NodeVerdict"] == before["tables"]["runs.NodeVerdict"] + 1
    assert final["rollups_match"]
