"""The demo suite: 90 days of realistic history, made by replaying uploads and ledger
changes day by day through the same services CI and owners use.

The reason codes drift on purpose: fixture trouble dominates the first half (the pin was
not yet kept up to date), frozen nodes the second half (flakes accumulating).
"""

from __future__ import annotations

import contextlib
import json
import random
from datetime import UTC, date, datetime, time, timedelta
from xml.sax.saxutils import quoteattr

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction

from flakeboard import rules
from junit.ingest import junit_ingest
from ledger.models import ApiToken, QuarantineEntry, Role, Suite
from ledger.quarantine import quarantine_clear, quarantine_create, quarantine_renew
from ledger.suites import member_set, suite_create
from ledger.tiers import tier_rule_add
from ledger.tokens import token_create

from .ingest import report_ingest, signals_ingest

DAYS = 90
DEMO_PASSWORD = "flakeboard-demo"  # noqa: S105 - the documented local demo sign-in
MANIFEST = "sha256:4be1c0de"
SEED = 9137

AREAS = ["ingest", "billing", "ledger", "export", "auth", "search", "queue", "render"]
# The last three weeks were measured with the client's measure command, which classifies
# each node; it found one order-dependent node (every in-process repeat failed, so it
# stopped after three runs) and one repeat-unsafe node (measured a process per run).
MEASURED_DAYS = 21
# Each CI job of the last four weeks uploaded its JUnit XML: two jobs a day (a Python
# matrix), pytest-rerunfailures rerunning a failure up to twice.
JUNIT_DAYS = 28
JUNIT_JOBS = ("py3.12", "py3.13")
FAILURE_MESSAGES = [
    "AssertionError: settlement took {0}.{1}s, over the 2.000s deadline",
    "TimeoutError: lock at 0x7f3a{0}{1:04x} held by worker {1}",
    "ConnectionResetError: [Errno 104] Connection reset by peer",
]
CLASSIFIED = {
    "tests/test_export.py::test_pager_after_setup": (3, 3, "order_dependent"),
    "tests/test_queue.py::test_global_registry": (200, 0, "repeat_unsafe"),
}
OWNERS = ["@owner", "@finley", "@priya", "@sam", "qa-team@example.com"]


def _node_ids() -> dict[str, list[str]]:
    tier0 = [f"tests/test_properties.py::test_{name}" for name in
             ("idempotent", "schema_is_closed", "ordering_independent", "roundtrip", "monotone")]
    tier1 = [f"tests/pinned/test_{a}_contract.py::test_matches_pin" for a in AREAS]
    tier2 = [
        f"tests/test_{area}.py::test_{verb}_{i}"
        for area in AREAS
        for i, verb in enumerate(("stream", "retry", "timeout", "batch", "cache",
                                  "lock", "merge", "page", "sort", "flush", "sync"))
    ]
    return {"tier0": tier0, "tier1": tier1, "tier2": tier2}


def _flake_rates(tier2: list[str], rng: random.Random) -> dict[str, float]:
    """Most nodes never fail; a dozen flake at rates the budget catches."""
    flaky = rng.sample(tier2, 10)
    return {node: (rng.choice([0.01, 0.02, 0.03, 0.05, 0.08]) if node in flaky else 0.0)
            for node in tier2}


def _report_body(tier2, rates, day_index, rng) -> bytes:
    rows = []
    for node in tier2:
        n = 200 if rng.random() > 0.003 else 120
        fails = sum(rng.random() < rates[node] for _ in range(n))
        rows.append({"nodeid": node, "n": n, "fails": fails,
                     "upper95": round(rules.upper95(fails, n), 4), "seed_base": SEED})
    if day_index >= DAYS - MEASURED_DAYS:
        for row in rows:
            row["classification"] = "flaky" if row["fails"] else "stable"
        rows.extend({"nodeid": node, "n": n, "fails": fails, "classification": kind,
                     "upper95": round(rules.upper95(fails, n), 4), "seed_base": SEED}
                    for node, (n, fails, kind) in CLASSIFIED.items())
    return json.dumps({"measurements": rows, "commit": f"{rng.getrandbits(40):010x}",
                       "branch": "main", "evidence": f"ci/run-{88000 + day_index}"}).encode()


def _signals_body(nodes, day_index, rng, frozen: set[str]) -> bytes:
    early = day_index < DAYS // 2
    records = []
    for node in nodes:
        drift = rng.random() < (0.09 if early else 0.02)
        missing = rng.random() < (0.04 if early else 0.01)
        record = {
            "node": node,
            "property_check": rng.choices(["pass", "fail", "not_run"], [0.93, 0.03, 0.04])[0],
            "fixture_lock": "missing" if missing else ("drifted" if drift else "match"),
            "flake_status": "frozen" if node in frozen else "stable",
            "fixture_manifest": None if missing else (f"sha256:{day_index:08x}" if drift
                                                      else MANIFEST),
            "seed": SEED,
            "freeze_expires": None,
        }
        records.append(record)
    return json.dumps({"records": records, "patch": f"patch-{day_index}-{rng.randint(1, 999)}",
                       "commit": f"{rng.getrandbits(40):010x}"}).encode()


def _users():
    User = get_user_model()
    users = {}
    for name, role in (("lead", Role.LEAD), ("owner", Role.OWNER), ("viewer", Role.VIEWER)):
        user, created = User.objects.get_or_create(username=name)
        if created:
            user.set_password(DEMO_PASSWORD)
            user.save()
        users[name] = (user, role)
    admin, created = User.objects.get_or_create(
        username="admin", defaults={"is_staff": True, "is_superuser": True}
    )
    if created:
        admin.set_password(DEMO_PASSWORD)
        admin.save()
    return users


def _tend_ledger(suite, day, now, rng, failing: list[str]):
    """Owners quarantine failing nodes, renew some entries as they near expiry, clear others."""
    for nodeid in failing:
        if rng.random() < 0.15:
            continue
        # Over the cap, or already open: as in real life, not every node gets in.
        with contextlib.suppress(ValidationError):
            quarantine_create(
                suite=suite, nodeid=nodeid, owner=rng.choice(OWNERS),
                expires=day + timedelta(days=rng.randint(12, suite.max_quarantine_days)),
                evidence=f"https://ci.example.com/runs/{rng.randint(80000, 99999)}",
                n=200, fails=rng.randint(3, 12), seed_base=SEED,
                actor=rng.choice(OWNERS[:4]), today=day, now=now,
                note="Flaky under load; owner investigating.",
            )
    for entry in QuarantineEntry.objects.filter(suite=suite).open().select_related("node"):
        days_left = (entry.expires - day).days
        late = days_left == -2  # an owner catches up with a failing gate
        if (days_left == 2 and rng.random() < 0.75) or (late and rng.random() < 0.5):
            quarantine_renew(
                entry=entry, expires=day + timedelta(days=rng.randint(14, 28)),
                evidence=f"https://ci.example.com/runs/{rng.randint(100000, 199999)}",
                actor=entry.owner if entry.owner.startswith("@") else "@owner",
                today=day, now=now, note="Still flaky; fix in review.",
            )
        elif late or (days_left == 5 and rng.random() < 0.25):
            quarantine_clear(entry=entry, note=rng.choice(["Fixed the race.", "Test deleted."]),
                             actor="@owner", now=now)


@transaction.atomic
def build_demo(today: date) -> Suite:
    suite = suite_create(slug="demo", name="Demo: payments service")
    suite.max_quarantined_share = 0.12
    suite.fixture_manifest, suite.fixture_seed = MANIFEST, SEED
    suite.save()
    for user, role in _users().values():
        member_set(suite=suite, user=user, role=role, actor="demo")
    # CI's uploads come with a real token of the suite, as Settings lists it.
    token = token_create(suite=suite, scope="write", actor="@lead", name="ci")[0]
    ci = token.label
    nodes = _node_ids()
    tier_rule_add(suite=suite, glob="tests/test_properties.py::*", tier=0, actor="@lead")
    tier_rule_add(suite=suite, glob="tests/pinned/*", tier=1, actor="@lead")
    rng = random.Random(SEED)
    rates = _flake_rates(nodes["tier2"], rng)
    all_nodes = nodes["tier0"] + nodes["tier1"] + nodes["tier2"]
    start = today - timedelta(days=DAYS - 1)
    for i in range(DAYS):
        day = start + timedelta(days=i)
        now = datetime.combine(day, time(9, 30), tzinfo=UTC)
        outcome = report_ingest(suite=suite, body=_report_body(nodes["tier2"], rates, i, rng),
                                actor=ci, now=now)
        failing = [m["nodeid"] for m in outcome.rows if m["reason"] == "over_budget"]
        _tend_ledger(suite, day, now + timedelta(hours=2), rng, failing)
        frozen = set(QuarantineEntry.objects.filter(suite=suite).live(day)
                     .values_list("node__nodeid", flat=True))
        for hour in (11, 16):
            signals_ingest(suite=suite, body=_signals_body(all_nodes, i, rng, frozen),
                           actor=ci,
                           now=datetime.combine(day, time(hour, rng.randint(0, 59)), tzinfo=UTC))
    _ensure_every_state(suite, today, nodes["tier2"], rng)
    _junit_history(suite, today, nodes["tier2"], rates, rng, ci)
    used = suite.batches.order_by("created_at").values_list("created_at", flat=True)
    ApiToken.objects.filter(pk=token.pk).update(created_at=used.first() - timedelta(hours=1),
                                                last_used_at=used.last())
    return suite


def _junit_attempts(name: str, rate: float, rng: random.Random) -> list[str]:
    """One test's testcase elements in a pytest file: a failure rerun up to twice."""
    classname = name.split("::")[0].removesuffix(".py").replace("/", ".")
    test = name.split("::")[1]
    cases = []
    for _ in range(3):
        if rng.random() >= rate * 4:
            cases.append(f"<testcase classname={quoteattr(classname)} name={quoteattr(test)} "
                         f'time="{rng.uniform(0.01, 0.4):.3f}"/>')
            break
        message = rng.choice(FAILURE_MESSAGES).format(rng.randint(2, 9), rng.randint(1, 999))
        cases.append(f"<testcase classname={quoteattr(classname)} name={quoteattr(test)} "
                     f'time="{rng.uniform(1, 3):.3f}"><failure message={quoteattr(message)}>'
                     f"trace</failure></testcase>")
    return cases


def _junit_history(suite, today, tier2, rates, rng, actor: str):
    """The JUnit files of the last JUNIT_DAYS days, through the same ingest as the API."""
    for i in range(JUNIT_DAYS):
        day = today - timedelta(days=JUNIT_DAYS - 1 - i)
        commit = f"{rng.getrandbits(40):010x}"
        for job in JUNIT_JOBS:
            cases = "".join(case for name in tier2 for case in
                            _junit_attempts(name, rates[name], rng))
            xml = (f'<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests">'
                   f'<testsuite name="pytest">{cases}</testsuite></testsuites>').encode()
            junit_ingest(suite=suite, body=xml, actor=actor,
                         query={"commit": commit, "branch": "main", "job": job},
                         now=datetime.combine(day, time(10, 15), tzinfo=UTC))


def _ensure_every_state(suite, today, tier2, rng):
    """Whatever the replay left, show one entry in each state, and one tier violation."""
    open_nodes = set(QuarantineEntry.objects.filter(suite=suite).open()
                     .values_list("node__nodeid", flat=True))
    spare = [n for n in tier2 if n not in open_nodes]
    now = datetime.combine(today, time(8, 0), tzinfo=UTC)
    wanted = {
        "expired": (today - timedelta(days=3), True),
        "expiring": (today + timedelta(days=4), False),
        "active": (today + timedelta(days=21), False),
    }
    for state, (expires, imported) in wanted.items():
        if QuarantineEntry.objects.filter(suite=suite).in_state(rules.EntryState(state), today):
            continue
        quarantine_create(
            suite=suite, nodeid=spare.pop(), owner="@owner", expires=expires,
            evidence="ci/run-89990", n=200, fails=6, seed_base=SEED, actor="@owner",
            today=today, now=now, imported=imported, note=f"Demo entry ({state}).",
        )
    contract = "tests/test_contract.py::test_schema_roundtrip"
    quarantine_create(
        suite=suite, nodeid=contract, owner="@priya", expires=today + timedelta(days=10),
        evidence="ci/run-89991", n=200, fails=4, seed_base=SEED, actor="@priya",
        today=today, now=now, imported=True, note="Quarantined before the contract rule.",
    )
    tier_rule_add(suite=suite, glob="tests/test_contract.py::*", tier=1, actor="@lead")
