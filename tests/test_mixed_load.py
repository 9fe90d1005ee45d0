"""Owners, a lead and CI writing one suite at the same moment, on a board served by gunicorn.

Every write takes its suite's lock first (ledger/locks.py), so nothing deadlocks: not an
owner quarantining a node as CI first names it (before that lock order, the owner's lock
on the suite row and the upload's foreign-key check on it waited for each other across the
new node's row), nor owners creating, renewing and clearing while a lead adds and removes
tier rules and CI uploads reports and signal batches over the same nodes. Afterwards no
request got a server error nor the log a deadlock, each accepted change is one audit
event, SPEC 2.4 and 4 hold on the final state, and the rollups equal the raw rows. Each
load's counts close the run's output. The clients run in processes of their own
(``python -m tests.test_mixed_load <role>``), on one timetable, so that the races run.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter
from datetime import UTC, datetime, timedelta
from itertools import pairwise

import pytest

from flakeboard import rules
from tests.throwaway import PASSWORD, Board, Session, answer, configured_backend, run_clients

pytestmark = pytest.mark.slow

BACKEND = configured_backend()
ROUNDS = {"postgresql": 20, "sqlite": 5}
SLOT_SECONDS = 0.25  # the clients' timetable: slot n starts n * SLOT_SECONDS after start
# How late (ms) an owner's create comes after the upload that first names its node. The
# old lock order deadlocked in a window some 10 to 30 ms wide, which moves with the
# machine's load (from 0-25 ms idle to 20-90 ms busy): the rounds sweep 0-95 ms.
LATE = [5 * r for r in range(20)]
SLOTS = 24  # the mixed load: six seconds of writes
CAP = 0.2  # the mixed suite's cap binds part-way through the load
BASE = [f"tests/test_base.py::test_{i}" for i in range(30)]
PROPS = [f"tests/test_props.py::test_{i}" for i in range(3)]  # tier 0 by a rule; CI says so too
SEEDS = [f"tests/test_seed_{i}.py::test_flaky" for i in range(6)]
OWNERS = ["finley", "robin"]
EXPIRES = (datetime.now(UTC).date() + timedelta(days=14)).isoformat()

SETUP = """
import json
from datetime import timedelta
from django.contrib.auth import get_user_model
from django.utils import timezone
from ledger.models import Membership, Role
from ledger.quarantine import quarantine_create
from ledger.suites import suite_create
from ledger.tiers import tier_rule_add
from ledger.tokens import token_create
from runs.ingest import report_ingest, signals_ingest
people = {"finley": Role.OWNER, "robin": Role.OWNER, "lea": Role.LEAD}
users = {name: get_user_model().objects.create_user(username=name, password=%(password)r)
         for name in people}
today, tokens = timezone.now().date(), {}
for slug, cap in (("first", 1.0), ("mix", %(cap)r)):
    suite = suite_create(slug=slug, name=slug)
    suite.max_quarantined_share = cap
    suite.save()
    for name, role in people.items():
        Membership.objects.create(suite=suite, user=users[name], role=role)
    tokens[slug] = token_create(suite=suite, scope="write", actor="@setup")[1]
rows = [{"nodeid": node, "n": 200, "fails": 0} for node in %(base)r]
report_ingest(suite=suite, body=json.dumps(rows).encode(), actor="setup")
tier_rule_add(suite=suite, glob="tests/test_props.py::test_*", tier=0, actor="@setup")
records = [{"node": node, "property_check": "pass", "fixture_lock": "match",
            "flake_status": "stable", "tier": 0} for node in %(props)r]
signals_ingest(suite=suite, body=json.dumps(records).encode(), actor="setup")
seeds = [quarantine_create(suite=suite, nodeid=node, owner="@finley", actor="@setup",
                           expires=today + timedelta(days=5), evidence="ci/run-0",
                           today=today).pk for node in %(seeds)r]
print(json.dumps({"tokens": tokens, "seeds": seeds}))
"""

FINAL_STATE = """
import json
from django.db.models import Count
from django.utils import timezone
from ledger.models import AuditEvent, Node, QuarantineEntry, Suite
from ledger.selectors import ledger_for_gate, share_figures, tier_resolution
from runs.models import Report, VerdictBatch
from runs.rollups import counts_from_raw, counts_from_rollups
suite = Suite.objects.get(slug=%(slug)r)
events = AuditEvent.objects.filter(suite=suite).select_related("entry__node")
entries = QuarantineEntry.objects.filter(suite=suite)
uploads = [*Report.objects.filter(suite=suite), *VerdictBatch.objects.filter(suite=suite)]
print(json.dumps({
    "events": [{"entry": e.entry_id, "node": e.entry and e.entry.node.nodeid,
                "action": e.action, "actor": e.actor, "before": e.before, "after": e.after,
                "note": e.note} for e in events.order_by("at", "pk")],
    "entries": {e.pk: {"renewals": e.renewals, "cleared": e.cleared_at is not None,
                       "evidence": e.evidence} for e in entries},
    "nodes": {n.nodeid: {"tier": n.tier, "resolved": tier_resolution(suite, n.nodeid).tier,
                         "stated": n.stated_tier} for n in Node.objects.filter(suite=suite)},
    "served": sorted(ledger_for_gate(suite)),
    "open_per_node": sorted({row["c"] for row in
                             entries.open().values("node").annotate(c=Count("pk"))}),
    "share": share_figures(suite, timezone.now().date()).answer(),
    "uploads": sorted(u.commit for u in uploads if u.commit),
    "rollups_match": counts_from_raw(suite) == counts_from_rollups(suite),
}))
"""


# --- the clients (run in their own processes) -----------------------------------------


def upload(args: dict, kind: str, commit: str, nodes: list[str], statuses: list[int]) -> int:
    """Upload a report or a signal batch naming ``nodes`` (stating tier 0 for PROPS)."""
    rows = [{"nodeid": n, "n": 200, "fails": i % 4} if kind == "reports" else
            {"node": n, "property_check": ("pass", "fail", "not_run")[i % 3],
             "fixture_lock": "match", "flake_status": "stable", "fixture_manifest": "sha256:a1"}
            for i, n in enumerate(nodes)]
    rows = [{**row, "tier": 0} if n in PROPS else row for n, row in zip(nodes, rows, strict=True)]
    body = {"commit": commit, "evidence": f"ci/run-{commit}",
            "measurements" if kind == "reports" else "records": rows}
    request = urllib.request.Request(
        f"{args['url']}/api/v1/suites/{args['suite']}/{kind}", json.dumps(body).encode(),
        {"Authorization": f"Bearer {args['token']}", "Content-Type": "application/json"})
    return answer(urllib.request.build_opener(), request, statuses)[0]


def first_sight(args: dict) -> dict:
    """Round after round, the owner quarantines a node nobody has named yet as CI uploads
    a report naming it first, among many new nodes: both set off together (CI from a
    thread of the owner's process), the owner ``late[round]`` ms after CI."""
    owner = Session(args["url"], "finley", f"/suites/{args['suite']}/ledger/new/")
    uploads: list[int] = []
    together = threading.Barrier(2)

    def as_ci():
        for r, node in enumerate(args["nodes"]):
            nodes = [node, *(f"tests/zz/test_first-{r}_{k}.py::test_x" for k in range(150))]
            together.wait()
            upload(args, "reports", f"first-{r}", nodes, uploads)

    ci = threading.Thread(target=as_ci)
    ci.start()
    for r, node in enumerate(args["nodes"]):
        form = {"node": node, "owner": "@finley", "expires": args["expires"],
                "evidence": f"ci/run-first-{r}"}
        together.wait()
        time.sleep(args["late"][r] / 1000)
        owner.send(f"/suites/{args['suite']}/ledger/new/", form)
    ci.join()
    return {"creates": owner.statuses[3:], "uploads": uploads, "statuses": owner.statuses + uploads}


def at_slot(args: dict, slot: float) -> None:
    time.sleep(max(0.0, args["start"] + slot * SLOT_SECONDS - time.time()))


def owner_client(args: dict) -> dict:
    """Creates, renewals and clearances at their slots; ``made`` names an entry this owner
    created earlier in the run (the action is skipped when that create was refused)."""
    session = Session(args["url"], args["username"], f"/suites/{args['suite']}/ledger/new/")
    base, made, results = f"/suites/{args['suite']}/ledger/", {}, []
    for slot, action in args["actions"]:
        at_slot(args, slot)
        pk = action.get("entry") or made.get(action.get("made"))
        if action["do"] == "create":
            form = {"node": action["node"], "owner": f"@{args['username']}", "n": 200,
                    "fails": 9, "expires": args["expires"], "evidence": action["evidence"]}
            status, location, _ = session.send(base + "new/", form)
            if status == 302:
                made[action["key"]] = pk = int(location.rstrip("/").rsplit("/", 1)[1])
        elif pk is None:
            continue
        elif action["do"] == "renew":
            form = {"expires": args["expires"], "evidence": action["evidence"], "owner": "",
                    "note": "still flaky"}
            status = session.send(f"{base}{pk}/renew/", form)[0]
        else:
            status = session.send(f"{base}{pk}/clear/", {"note": action["note"]})[0]
        results.append({**action, "entry": pk, "status": status, "actor": f"@{args['username']}"})
    return {"actions": results, "statuses": session.statuses}


def lead_client(args: dict) -> dict:
    """Adds tier rules, confirming the entries a rule would turn into violations (asked
    again when they changed meanwhile), and removes rules by their row's button."""
    settings = f"/suites/{args['suite']}/settings/"
    session, results = Session(args["url"], "lea", settings), []
    for slot, step in args["steps"]:
        at_slot(args, slot)
        confirms = 0
        if step["do"] == "add":
            form = {"glob": step["glob"], "tier": step["tier"], "confirm": ""}
            status, _, page = session.send(settings + "tier-rules/", form)
            while status == 200 and b"Add the rule anyway" in page and confirms < 10:
                asked = re.search(rb'name="confirm" value="([\d,]*)"', page).group(1)
                form["confirm"], confirms = asked.decode(), confirms + 1
                status, _, page = session.send(settings + "tier-rules/", form)
        else:
            row = re.escape(f"<code>{step['glob']}</code>").encode() + rb".*?/(\d+)/remove/"
            pk = int(re.search(row, session.send(settings)[2], re.S).group(1))
            status = session.send(f"{settings}tier-rules/{pk}/remove/", {})[0]
        results.append({**step, "status": status, "confirms": confirms})
    return {"steps": results, "statuses": session.statuses}


def ci_client(args: dict) -> dict:
    statuses, results = [], []
    for slot, kind, commit, nodes, new in args["uploads"]:
        nodes += [f"tests/zz/test_{commit}_{k}.py::test_x" for k in range(new)]
        at_slot(args, slot)
        results.append({"commit": commit, "status": upload(args, kind, commit, nodes, statuses)})
    return {"uploads": results, "statuses": statuses}


ROLES = {"first_sight": first_sight, "owner": owner_client, "lead": lead_client, "ci": ci_client}

# --- the tests ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(request, tmp_path_factory):
    """A board of the backend the test names, seeded and served: one per backend."""
    if request.param == "postgresql" and BACKEND != "postgresql":
        pytest.skip("the PostgreSQL board needs DATABASE_URL to be PostgreSQL")
    board = Board(tmp_path_factory.mktemp(f"mixed-{request.param}"), request.param)
    try:
        board.seeded = board.run(SETUP % {"password": PASSWORD, "cap": CAP, "base": BASE,
                                          "props": PROPS, "seeds": SEEDS})
        board.serve(workers=4 if request.param == "postgresql" else 2, threads=2)
        yield board
    finally:
        board.close()


def load_counts(board, mark: int, statuses: list[int]) -> tuple[str, dict]:
    """The server log since ``mark``, and what went wrong: 5xx answers, deadlocks (one
    DeadlockDetected exception line each), tracebacks, any other "deadlock detected"."""
    log = board.server_log()[mark:]
    return log, {"5xx": sum(status >= 500 for status in statuses),
                 "deadlocks": len(re.findall(r"^[\w.]*DeadlockDetected\b", log, re.M)),
                 "tracebacks": log.count("Traceback"),
                 "deadlock lines": log.lower().count("deadlock detected")}


def timetable(board, slug: str) -> dict:
    """What every client of a load is told: the board, the suite, when slot 0 starts."""
    return {"url": board.url, "suite": slug, "token": board.seeded["tokens"][slug],
            "start": time.time() + 3, "expires": EXPIRES}


@pytest.mark.parametrize("served", ["sqlite", "postgresql"], indirect=True)
def test_an_owner_quarantines_a_node_as_ci_names_it_first(served, load_summary):
    board, rounds, mark = served, ROUNDS[served.backend], len(served.server_log())
    nodes = [f"tests/test_first_{r}.py::test_new" for r in range(rounds)]
    late = LATE[:: len(LATE) // rounds]
    [result] = run_clients([("first_sight", {**timetable(board, "first"), "nodes": nodes,
                                             "late": late})], module=__name__)
    log, trouble = load_counts(board, mark, result["statuses"])
    load_summary.append(f"First-sight race ({board.backend}): {rounds} rounds, "
                        f"{len(result['statuses'])} requests sent, {trouble['5xx']} answered "
                        f"5xx, {trouble['deadlocks']} deadlocks in the server log")
    assert set(trouble.values()) == {0}, (trouble, result, log[-5000:])
    # Under a cap of 1 nothing refuses these creates: each is one entry and one event.
    assert (result["creates"], result["uploads"]) == ([302] * rounds, [201] * rounds)
    final = board.run(FINAL_STATE % {"slug": "first"})
    assert sorted(e["node"] for e in final["events"] if e["action"] == "create") == sorted(nodes)
    assert final["open_per_node"] == [1] and set(nodes) <= set(final["served"])
    assert final["rollups_match"]


def mixed_plan(board) -> list[tuple[str, dict]]:
    """Who does what, when (in slots): at every slot each owner creates an entry for a new
    node, which CI names for the first time in the same slot, and renews or clears one; the
    lead adds and removes tier rules, some over quarantined nodes; CI uploads twice."""
    seeds, common = board.seeded["seeds"], timetable(board, "mix")
    jobs = []
    for o, name in enumerate(OWNERS):
        actions = []
        for s in range(SLOTS):
            actions.append((s + LATE[(s * 7 + o * 3) % 20] / 1000 / SLOT_SECONDS, {
                "do": "create", "key": f"{o}-{s}", "node": f"tests/test_new_{o}_{s}.py::test_x",
                "evidence": f"ci/create-{o}-{s}"}))
            follow = [{"do": "renew", "entry": seeds[o + 2 * (s // 3 % 3)]},
                      {"do": "renew", "made": f"{o}-{s - 1}"},
                      {"do": "clear" if s % 6 == 2 else "renew", "made": f"{o}-{s - 2}"}]
            actions.append((s + 0.5, {**follow[s % 3], "evidence": f"ci/renew-{o}-{s}",
                                      "note": f"fixed at slot {s}"}))
            refused = {5: PROPS[o], 9: SEEDS[2 + o]}  # tier 0; an open entry already
            if s in refused:
                actions.append((s + 0.6, {"do": "create", "key": "-", "node": refused[s],
                                          "evidence": f"ci/refused-{o}-{s}"}))
            if s in (12, 15, 21):  # each clears a seed; then both renew seed 3 at once
                actions.append((s + 0.7, {"do": "clear" if s == 12 else "renew",
                                          "entry": seeds[o] if s == 12 else seeds[3],
                                          "evidence": f"ci/both-{o}-{s}", "note": "fixed"}))
        jobs.append(("owner", {**common, "username": name, "actions": actions}))
    # Kept: rules over quarantined nodes (removing one would lift its entries back into
    # the share, over the cap). Removed again: rules over nodes nobody quarantines.
    steps = [(0, "add", "tests/zz/*", 1), (2, "remove", "tests/zz/*", 1),
             (4, "add", "tests/test_seed_5.py::*", 1), (6, "add", "tests/test_base.py::*1", 0),
             (8, "add", "tests/test_new_*_7.py::*", 0), (10, "remove", "tests/test_base.py::*1", 0),
             (12, "add", "tests/test_new_1_1*.py::*", 0), (14, "add", "tests/zz/test_mix-1-*", 2),
             (16, "add", "tests/test_props.py::*", 1), (18, "remove", "tests/zz/test_mix-1-*", 2),
             (20, "remove", "tests/test_props.py::*", 1), (22, "add", "tests/zz/*", 1)]
    jobs.append(("lead", {**common, "steps": [
        (slot + 0.25, {"do": do, "glob": glob, "tier": tier}) for slot, do, glob, tier in steps
    ]}))
    for p in range(2):
        uploads = []
        for s in range(SLOTS):
            nodes = [f"tests/test_new_{o}_{t}.py::test_x" for o in range(2) for t in (s, s - 1)
                     if t >= 0] + SEEDS + PROPS + [BASE[(s * 5 + k) % 30] for k in range(8)]
            for half, kind in enumerate(("reports", "verdicts")[:: 1 - 2 * p]):
                uploads.append((s + half / 2, kind, f"mix-{p}-{s}-{half}", nodes, 1))
        jobs.append(("ci", {**common, "uploads": uploads}))
    return jobs


def tiers_when_quarantined(events: list[dict]):
    """Replays the audit trail: each new entry's node's tier at that moment, under the
    tier rules then in force (a stated tier never counts). Each service stamps its event
    under the suite's lock, so the events' order is the order of the changes."""
    in_force: dict[str, int] = {}
    for event in events:
        if event["action"] == "tier_rule" and event["note"] == "added":
            in_force[event["after"]["glob"]] = event["after"]["tier"]
        elif event["action"] == "tier_rule":
            del in_force[event["before"]["glob"]]
        elif event["action"] == "create":
            specs = [rules.TierRuleSpec(*rule) for rule in in_force.items()]
            yield rules.resolve_tier(event["node"], specs).tier


@pytest.mark.parametrize("served", ["postgresql"], indirect=True)
def test_owners_a_lead_and_ci_at_once_on_postgresql(served, load_summary):
    board, mark = served, len(served.server_log())
    results = run_clients(mixed_plan(board), module=__name__)
    log, trouble = load_counts(board, mark, [s for r in results for s in r["statuses"]])
    actions = [a for result in results[: len(OWNERS)] for a in result["actions"]]
    steps = results[len(OWNERS)]["steps"]
    uploads = [u for result in results[len(OWNERS) + 1 :] for u in result["uploads"]]
    final = board.run(FINAL_STATE % {"slug": "mix"})
    events = [e for e in final["events"] if e["actor"] != "@setup"]
    summary = (f"Mixed load (postgresql): {sum(len(r['statuses']) for r in results)} requests "
               f"sent ({len(actions)} owner actions, {len(steps)} tier-rule changes, "
               f"{len(uploads)} uploads), {trouble['5xx']} answered 5xx, {trouble['deadlocks']}"
               f" deadlocks in the server log, {len(events)} audit events checked")
    load_summary.append(summary)

    # No server error, no deadlock; a refusal is the form again, with its reasons (200).
    assert set(trouble.values()) == {0}, (summary, trouble, log[-5000:])
    assert {a["status"] for a in actions} | {s["status"] for s in steps} <= {200, 302}
    assert {u["status"] for u in uploads} == {201}
    assert final["uploads"] == sorted(u["commit"] for u in uploads)

    # Every accepted change is exactly one audit event, and a refused one none.
    for action, detail in (("create", "evidence"), ("renew", "evidence"), ("clear", "note")):
        done = Counter((a["entry"], a["actor"], a[detail]) for a in actions
                       if a["do"] == action and a["status"] == 302)
        told = Counter((e["entry"], e["actor"], {**e, **e["after"]}[detail]) for e in events
                       if e["action"] == action)
        assert done and told == done, action
    done = Counter(("added" if s["do"] == "add" else "removed", s["glob"], s["tier"])
                   for s in steps if s["status"] == 302)
    told = Counter((e["note"], *(e["after"] or e["before"]).values()) for e in events
                   if e["action"] == "tier_rule")
    assert told == done and sum(s["confirms"] for s in steps) >= 1
    assert len(events) == sum(a["status"] == 302 for a in actions) + done.total()

    # Each entry's story starts with its creation, each event starts where the last one
    # ended, and the entry is where the last one left it.
    for pk, entry in final["entries"].items():
        story = [e for e in final["events"] if str(e["entry"]) == pk]
        assert story[0]["action"] == "create" and story[0]["before"] == {}
        assert all(later["before"] == earlier["after"] for earlier, later in pairwise(story))
        assert {name: story[-1]["after"][name] for name in entry} == entry
        assert entry["renewals"] == sum(e["action"] == "renew" for e in story)

    # SPEC 2.4 and 4 on the final state: no tier-0/1 node was ever quarantined nor is one
    # served; each node's tier is what the rules in force say; at most one open entry per
    # node; the share within the cap; the rollups equal the raw rows.
    nodes = final["nodes"]
    assert all(map(rules.quarantinable, tiers_when_quarantined(final["events"])))
    token = {"Authorization": f"Bearer {board.seeded['tokens']['mix']}"}
    request = urllib.request.Request(f"{board.url}/api/v1/suites/mix/ledger", headers=token)
    gate = json.loads(answer(urllib.request.build_opener(), request, [])[2])  # as CI reads it
    assert sorted(gate) == final["served"]
    assert all(rules.quarantinable(nodes[node]["tier"]) for node in gate)
    assert all(node["tier"] == node["resolved"] for node in nodes.values())
    assert final["open_per_node"] == [1]
    assert not final["share"]["over_cap"], final["share"]
    assert final["rollups_match"]


if __name__ == "__main__":
    print(json.dumps(ROLES[sys.argv[1]](json.loads(sys.argv[2]))))
