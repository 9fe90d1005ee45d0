"""Concurrent uploads, renewals and clearances against a board served by gunicorn.

CI uploads from many jobs at once, some of them the very same body, while owners renew
and clear entries in the browser. Afterwards every distinct upload is stored exactly
once, none is lost, no request got a server error, and the chart rollups equal the counts
recomputed from the raw rows. The board runs on a database of its own: 8 uploading
processes on PostgreSQL (when DATABASE_URL is PostgreSQL), fewer on an SQLite file (one
writer at a time, waiting for the lock instead of failing with "database is locked").
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import timedelta
from itertools import pairwise

import pytest
from django.utils import timezone

from tests.throwaway import PASSWORD, Board, configured_backend, run_clients

pytestmark = pytest.mark.slow

BACKEND = configured_backend()
ENTRIES = 24
SHARED_EVERY = 5  # every fifth upload of each process is the same body in all of them

SETUP = """
import json
from datetime import timedelta
from django.contrib.auth import get_user_model
from django.utils import timezone
from ledger.models import Membership, Role
from ledger.quarantine import quarantine_create
from ledger.suites import suite_create
from ledger.tokens import token_create
suite = suite_create(slug="acme", name="Acme")
suite.max_quarantined_share = 1.0
suite.save()
for name in ("finley", "robin"):
    user = get_user_model().objects.create_user(username=name, password=%(password)r)
    Membership.objects.create(suite=suite, user=user, role=Role.OWNER)
today = timezone.now().date()
entries = [
    quarantine_create(suite=suite, nodeid=f"tests/test_q{i}.py::test_flaky", owner="@finley",
                      expires=today + timedelta(days=5), evidence="ci/run-0", actor="@finley",
                      today=today).pk
    for i in range(%(entries)d)
]
token = token_create(suite=suite, scope="write", actor="@lea")[1]
print(json.dumps({"entries": entries, "token": token}))
"""

VERIFY = """
import json
from ledger.models import AuditEvent, QuarantineEntry, Suite
from runs.models import Report, VerdictBatch
from runs.rollups import counts_from_raw, counts_from_rollups
suite = Suite.objects.get(slug="acme")
entries = []
for entry in QuarantineEntry.objects.filter(suite=suite).order_by("pk"):
    events = [
        {"action": e.action, "actor": e.actor, "before": e.before, "after": e.after}
        for e in AuditEvent.objects.filter(entry=entry).order_by("at", "pk")
    ]
    entries.append({"pk": entry.pk, "renewals": entry.renewals,
                    "evidence": entry.evidence, "cleared": entry.cleared_at is not None,
                    "events": events})
print(json.dumps({
    "reports": list(Report.objects.filter(suite=suite).values_list("commit", flat=True)),
    "batches": list(VerdictBatch.objects.filter(suite=suite).values_list("commit", flat=True)),
    "rows_complete": all(r.measurements.count() == r.measurement_count
                         for r in Report.objects.all())
                     and all(b.verdicts.filter(sent=True).count() == b.record_count
                             for b in VerdictBatch.objects.all()),
    "rollups_match": counts_from_raw(suite) == counts_from_rollups(suite),
    "entries": entries,
}))
"""


def _served(tmp_path_factory, backend: str, workers: int):
    board = Board(tmp_path_factory.mktemp(f"concurrency-{backend}"), backend)
    try:
        board.seeded = board.run(SETUP % {"password": PASSWORD, "entries": ENTRIES})
        board.serve(workers=workers, threads=2)
        yield board
    finally:
        board.close()


@pytest.fixture(scope="module")
def postgresql_board(tmp_path_factory):
    if BACKEND != "postgresql":
        pytest.skip("the PostgreSQL board needs DATABASE_URL to be PostgreSQL")
    yield from _served(tmp_path_factory, "postgresql", workers=4)


@pytest.fixture(scope="module")
def sqlite_board(tmp_path_factory):
    yield from _served(tmp_path_factory, "sqlite", workers=2)


BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(params=BACKENDS)
def board(request):
    return request.getfixturevalue(f"{request.param}_board")


def upload_plan(processes: int, per_process: int, entry_nodes: list[str]):
    """Each process's uploads. Every SHARED_EVERY-th is the same body in every process;
    the others are distinct. Node ids overlap between uploads (so concurrent uploads race
    to create the same nodes) and include quarantined nodes (whose entries are changing)."""
    plans = []
    for p in range(processes):
        uploads = []
        for i in range(per_process):
            shared = i % SHARED_EVERY == 0
            key = f"shared-{i}" if shared else f"p{p}-u{i}"
            kind = "reports" if i % 2 == 0 else "verdicts"
            nodes = [entry_nodes[(i + k) % len(entry_nodes)] for k in range(4)]
            nodes += [f"tests/test_pool.py::test_{(i * 3 + k) % 40}" for k in range(10)]
            nodes += [f"tests/test_{key}.py::test_{k}" for k in range(4)]
            if kind == "reports":
                rows = [{"nodeid": n, "n": 200, "fails": (j * 7 + i) % 4}
                        for j, n in enumerate(nodes)]
                body = {"measurements": rows, "commit": key, "evidence": f"ci/run-{key}"}
            else:
                rows = [{"node": n, "property_check": ("pass", "fail", "not_run")[(j + i) % 3],
                         "fixture_lock": "match", "flake_status": "stable",
                         "fixture_manifest": "sha256:a1"} for j, n in enumerate(nodes)]
                body = {"records": rows, "commit": key, "patch": f"patch-{key}"}
            uploads.append({"key": key, "kind": kind, "body": body})
        plans.append(uploads)
    return plans


def owner_plans(board, owners: int, rounds: int):
    """Owners renew every entry in turn and clear every fourth one on the way."""
    expires = (timezone.now().date() + timedelta(days=14)).isoformat()
    plans = []
    for o, username in enumerate(["finley", "robin"][:owners]):
        actions = []
        for r in range(rounds):
            for k, pk in enumerate(board.seeded["entries"]):
                if k % owners != o:
                    continue
                if r == rounds - 1 and k % 4 == 0:
                    actions.append({"do": "clear", "entry": pk})
                else:
                    actions.append({"do": "renew", "entry": pk,
                                    "evidence": f"ci/renew-{username}-{k}-{r}"})
        plans.append(("owner", {"url": board.url, "suite": "acme", "username": username,
                                "expires": expires, "actions": actions}))
    return plans


def check_the_load(board, processes: int, per_process: int, owners: int, rounds: int):
    """The load on a board its module shares: another test's uploads and entries (stored
    before, in any order) are left out of what this load is checked against."""
    before = board.run(VERIFY)
    entry_nodes = [f"tests/test_q{i}.py::test_flaky" for i in range(ENTRIES)]
    plans = upload_plan(processes, per_process, entry_nodes)
    jobs = [("upload", {"url": board.url, "suite": "acme", "token": board.seeded["token"],
                        "uploads": uploads}) for uploads in plans]
    jobs += owner_plans(board, owners, rounds)
    results = run_clients(jobs)
    uploads = [r for result in results[:processes] for r in result]
    actions = [r for result in results[processes:] for r in result]

    # No request failed: every upload stored or answered as a duplicate.
    assert len(uploads) == processes * per_process
    statuses = Counter(r["status"] for r in uploads)
    log = board.server_log()
    assert set(statuses) <= {200, 201}, (statuses, log[-5000:])
    assert not [a for a in actions if a["status"] >= 500], log[-5000:]
    assert {a["status"] for a in actions} <= {200, 302}
    assert "database is locked" not in log and "Traceback" not in log, log[-3000:]

    # Every distinct upload stored exactly once, none lost; each duplicate answered
    # with the one stored upload.
    stored = board.run(VERIFY)
    expected = {(r["kind"], r["key"]) for r in uploads}
    stored_keys = Counter(("reports", c) for c in stored["reports"])
    stored_keys += Counter(("verdicts", c) for c in stored["batches"])
    stored_keys -= Counter(("reports", c) for c in before["reports"])
    stored_keys -= Counter(("verdicts", c) for c in before["batches"])
    assert sorted(stored_keys.elements()) == sorted(expected)
    by_key = defaultdict(list)
    for r in uploads:
        by_key[r["key"]].append(r)
    for key, answers in by_key.items():
        assert [a["status"] for a in answers].count(201) == 1, (key, answers)
        assert len({a["id"] for a in answers}) == 1, (key, answers)
        assert sum(bool(a["duplicate"]) for a in answers) == len(answers) - 1
    assert stored["rows_complete"]
    assert stored["rollups_match"]

    # The audit trail tells each entry's story: every accepted renewal and clearance is
    # one event, and each event starts where the previous one ended.
    accepted = Counter((a["entry"], a["do"]) for a in actions if a["status"] == 302)
    for entry in stored["entries"]:
        if entry["pk"] not in board.seeded["entries"]:
            continue  # another test's entry (the races')
        events = entry["events"]
        renewals = [e for e in events if e["action"] == "renew"]
        assert entry["renewals"] == len(renewals) == accepted[(entry["pk"], "renew")]
        assert [e["action"] for e in events].count("clear") == accepted[(entry["pk"], "clear")]
        assert entry["cleared"] == ("clear" in [e["action"] for e in events])
        for earlier, later in pairwise(events):
            assert later["before"] == earlier["after"], entry["pk"]
    return len(uploads), len(expected)


def test_eight_processes_of_uploads_on_postgresql(postgresql_board):
    sent, distinct = check_the_load(postgresql_board, processes=8, per_process=25, owners=2,
                                    rounds=2)
    assert (sent, distinct) == (200, 165)


def test_fewer_writers_on_sqlite_never_see_database_is_locked(sqlite_board):
    sent, distinct = check_the_load(sqlite_board, processes=4, per_process=10, owners=1,
                                    rounds=1)
    assert (sent, distinct) == (40, 34)


ATTEMPTS = """
import json
from runs.models import VerdictBatch
batches = VerdictBatch.objects.filter(suite__slug="acme", patch="patch-race", commit="c-race")
print(json.dumps([
    {"attempt": b.attempt, "evidence": b.evidence, "verdict": b.verdict, "id": b.pk,
     "records": {v.node.nodeid: v.attempts for v in b.verdicts.select_related("node")}}
    for b in batches.order_by("attempt")
]))
"""


@pytest.mark.parametrize(("backend", "processes"), [("postgresql", 8), ("sqlite", 4)])
def test_attempts_sent_at_once_are_judged_one_after_another(request, backend, processes):
    """Attempts of one gate (one patch and commit) sent at the same moment: every one is
    stored, numbered 1..k without a gap, and each is judged over all the attempts before it,
    so the failure in one of them is in the verdict of every later one."""
    board = request.getfixturevalue(f"{backend}_board")
    nodes = [f"tests/test_attempt.py::test_{k}" for k in range(10)]
    failing = 2  # the process whose attempt fails one node

    def attempt(p: int) -> dict:
        records = [{"node": n, "property_check": "fail" if p == failing and k == 3 else "pass",
                    "fixture_lock": "match", "flake_status": "stable"}
                   for k, n in enumerate(nodes)]
        return {"key": f"attempt-{p}", "kind": "verdicts",
                "body": {"records": records, "patch": "patch-race", "commit": "c-race",
                         "evidence": f"ci/attempt-{p}"}}

    results = run_clients([("upload", {"url": board.url, "suite": "acme",
                                       "token": board.seeded["token"],
                                       "uploads": [attempt(p)]}) for p in range(processes)])
    assert [r["status"] for [r] in results] == [201] * processes, board.server_log()[-3000:]
    stored = board.run(ATTEMPTS)
    assert [b["attempt"] for b in stored] == list(range(1, processes + 1))
    failed_at = next(b["attempt"] for b in stored if b["evidence"] == f"ci/attempt-{failing}")
    assert [b["verdict"] for b in stored] == [
        "reject" if b["attempt"] >= failed_at else "accept" for b in stored]
    last = stored[-1]["records"][nodes[3]]
    assert last == {"runs": processes, "failed_in": [failed_at],
                    "passed_in": [a for a in range(1, processes + 1) if a != failed_at],
                    "infrastructure_in": []}


RACE = """
import json
from datetime import timedelta
from django.utils import timezone
from ledger.models import Suite
from ledger.quarantine import quarantine_create
suite = Suite.objects.get(slug="acme")
today = timezone.now().date()
entry = quarantine_create(suite=suite, nodeid=%(node)r, owner="@finley",
                          expires=today + timedelta(days=5), evidence="ci/run-0",
                          actor="@finley", today=today)
print(json.dumps(entry.pk))
"""

TRAIL = """
import json
from ledger.models import AuditEvent, QuarantineEntry
entry = QuarantineEntry.objects.get(pk=%(pk)d)
events = [{"action": e.action, "actor": e.actor, "before": e.before, "after": e.after,
           "note": e.note} for e in AuditEvent.objects.filter(entry=entry).order_by("at", "pk")]
print(json.dumps({"renewals": entry.renewals, "evidence": entry.evidence, "events": events}))
"""


def _race(board, node: str, evidence: list[str]):
    pk = board.run(RACE % {"node": node})
    expires = (timezone.now().date() + timedelta(days=14)).isoformat()
    [answers] = run_clients([("race", {
        "url": board.url, "suite": "acme", "entry": pk, "usernames": ["finley", "robin"],
        "evidence": evidence, "expires": expires,
    })])
    return answers, board.run(TRAIL % {"pk": pk})


def test_two_owners_renewing_one_entry_at_once_are_both_answered(board):
    answers, trail = _race(board, "tests/test_race.py::test_a", ["ci/run-finley", "ci/run-robin"])
    assert [a["status"] for a in answers] == [302, 302]
    renewals = [e for e in trail["events"] if e["action"] == "renew"]
    assert trail["renewals"] == len(renewals) == 2
    assert {e["actor"] for e in renewals} == {"@finley", "@robin"}
    create, first, second = trail["events"]
    assert first["before"] == create["after"] and second["before"] == first["after"]
    assert trail["evidence"] == second["after"]["evidence"]


def test_two_owners_sending_the_same_renewal_at_once_get_one_renewal(board):
    answers, trail = _race(board, "tests/test_race.py::test_b", ["ci/run-same", "ci/run-same"])
    assert sorted(a["status"] for a in answers) == [200, 302]
    refused = next(a for a in answers if a["status"] == 200)
    assert refused["needs_new_evidence"]
    renewals = [e for e in trail["events"] if e["action"] == "renew"]
    assert trail["renewals"] == len(renewals) == 1
    assert renewals[0]["before"]["evidence"] == "ci/run-0"
