"""The demo suite: 90 days of realistic history, made by replaying uploads and ledger
changes day by day through the same services CI and owners use.

Most days pass, as real history does. A test starts to flake now and then; the first
report fails, its owner quarantines it, the fix lands a few days later, and once its
measurements are clean again the entry is cleared. One week in the second half went bad
(a dependency bump made three tests flake at once). The signals' reason codes drift on
purpose: fixture trouble dominates the first half (the pin was not yet kept up to date),
frozen nodes the second half. Now and then a rejected patch is rerun at its commit until
its flaky node passes, and the board still rejects it. Nothing is dated after the moment
the demo is built.
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
from django.utils import timezone

from flakeboard import rules
from junit.ingest import junit_ingest
from ledger.models import ApiToken, QuarantineEntry, Role, Suite
from ledger.quarantine import quarantine_clear, quarantine_create, quarantine_renew
from ledger.settings_services import fixture_pin_set
from ledger.suites import member_set, suite_create
from ledger.tiers import tier_rule_add
from ledger.tokens import token_create
from runs.ingest import report_ingest, signals_ingest

DAYS = 90
DEMO_PASSWORD = "flakeboard-demo"  # noqa: S105 - the documented local demo sign-in
# The pin as `flakeboard_ci.py pin` prints it: the SHA-256 of the demo's fixture manifest.
MANIFEST = "sha256:4c052d28d4f9bb3d962a5276d091e03db9d1988a12609573ca2f3f826328e538"
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
LOAD_FLAKE_RATE = 0.02  # the few tests that flake under CI's load only
FAILURE_MESSAGES = [
    "AssertionError: settlement took {0}.{1}s, over the 2.000s deadline",
    "TimeoutError: lock at 0x7f3a{0}{1:04x} held by worker {1}",
    "ConnectionResetError: [Errno 104] Connection reset by peer",
]
ORDER_DEPENDENT = "tests/test_export.py::test_pager_after_setup"
# What measure named as its cause: a test of the suite's that sets the state it needs.
STATE_SETTER = "tests/test_render.py::test_page_7"
REPEAT_UNSAFE = "tests/test_queue.py::test_global_registry"
# The order-dependent node was found on the first of these days and fixed after the last.
ORDER_DEPENDENT_DAYS = range(DAYS - 14, DAYS - 11)
# The days a rejected patch was rerun at its commit: some in every range the trends offer.
RETRY_DAYS = (DAYS - 50, DAYS - 20, DAYS - 6, DAYS - 2)
# Flaky episodes: (first day, days until the fix lands, failure rate). Days count from the
# first of the history. The last two were fixed days ago: their entries are ready to clear
# (the first of them renewed while its fix was in review), and the last days pass.
EPISODES = [(8, 5, 0.05), (27, 4, 0.03), (52, 5, 0.08), (53, 4, 0.03), (54, 7, 0.05),
            (DAYS - 18, 12, 0.03), (DAYS - 10, 5, 0.05)]
# One day a cancelled job left a node short of runs.
SHORT_DAY = 40
# Pull requests that added tests, measured at birth by gate --measure (docs/new-tests.md):
# (day, module, each new test's fails in its 30 runs: both passing and failing is flaky).
BIRTHS = [
    (DAYS - 25, "tests/test_refunds.py", {"test_partial_refund": 4, "test_full_refund": 0}),
    (DAYS - 12, "tests/test_invoices.py", {"test_totals": 0, "test_currency_rounding": 0}),
    (DAYS - 3, "tests/test_webhooks.py", {"test_retry_backoff": 7, "test_signature": 0}),
]
# Owners clear a ready entry this many days after it became ready.
CLEARED_AFTER_READY = 4
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


class Flakes:
    """Which node flakes on which day, and at what rate: the episodes, each on its own node."""

    def __init__(self, tier2: list[str], rng: random.Random):
        nodes = rng.sample(tier2, len(EPISODES))
        self.episodes = [(node, range(first, first + days), rate)
                         for node, (first, days, rate) in zip(nodes, EPISODES, strict=True)]

    def rate(self, node: str, day_index: int) -> float:
        return next((rate for flaky, days, rate in self.episodes
                     if flaky == node and day_index in days), 0.0)


def _row(node: str, n: int, fails: int, **extra) -> dict:
    return {"nodeid": node, "n": n, "fails": fails,
            "upper95": round(rules.upper95(fails, n), 4), "seed_base": SEED, **extra}


def _report_body(tier2, flakes: Flakes, day_index, rng) -> bytes:
    rows = []
    for node in tier2:
        n = 120 if day_index == SHORT_DAY and node == tier2[day_index] else 200
        rate = flakes.rate(node, day_index)
        rows.append(_row(node, n, sum(rng.random() < rate for _ in range(n))))
    if day_index >= DAYS - MEASURED_DAYS:
        for row in rows:
            row["classification"] = "flaky" if row["fails"] else "stable"
        cause = {"role": "state_setter", "nodes": [STATE_SETTER]}
        rows.append(_row(ORDER_DEPENDENT, 3, 3, classification="order_dependent", cause=cause)
                    if day_index in ORDER_DEPENDENT_DAYS
                    else _row(ORDER_DEPENDENT, 200, 0, classification="stable"))
        rows.append(_row(REPEAT_UNSAFE, 200, 0, classification="repeat_unsafe"))
    return json.dumps({"measurements": rows, "commit": f"{rng.getrandbits(40):010x}",
                       "branch": "main", "evidence": f"ci/run-{88000 + day_index}"}).encode()


def _births(suite, start: date, at, actor: str) -> None:
    """The guard's report of each pull request of BIRTHS, on its branch: the new tests'
    runs at the commit that added them."""
    for day_index, module, tests in BIRTHS:
        rows = [_row(f"{module}::{name}", suite.new_test_runs, fails, new_test=True)
                for name, fails in tests.items()]
        body = {"measurements": rows, "commit": f"{0xb127 + day_index:010x}",
                "branch": f"add-{module.removeprefix('tests/test_').removesuffix('.py')}",
                "evidence": f"ci/run-{77000 + day_index}"}
        day = start + timedelta(days=day_index)
        report_ingest(suite=suite, body=json.dumps(body).encode(), actor=actor,
                      now=at(day, 15, 10))


def _signals_body(nodes, day_index, rng, frozen: set[str]) -> bytes:
    """A patch's records: the nodes it touches, mostly clean. Now and then the patch's
    fixtures drifted from the pin (often in the first half), a property failed, or one
    was not run."""
    early = day_index < DAYS // 2
    drifted = rng.random() < (0.15 if early else 0.03)
    missing = rng.random() < (0.04 if early else 0.01)
    failed = rng.random() < 0.04
    not_run = rng.random() < 0.06
    touched = rng.sample(nodes, rng.randint(6, 24))
    records = []
    for i, node in enumerate(touched):
        drift = drifted and i % 2 == 0
        lost = missing and i == 1
        check = ("fail" if failed and i == 0
                 else "not_run" if not_run and i == len(touched) - 1 else "pass")
        records.append(_record(
            node, check, frozen, lock="missing" if lost else ("drifted" if drift else "match"),
            manifest=None if lost else (f"sha256:{day_index:064x}" if drift else MANIFEST)))
    return json.dumps({"records": records, "patch": f"patch-{day_index}-{rng.randint(1, 999)}",
                       "commit": f"{rng.getrandbits(40):010x}"}).encode()


def _record(node, check, frozen: set[str], lock="match", manifest=MANIFEST) -> dict:
    return {"node": node, "property_check": check, "fixture_lock": lock,
            "flake_status": "frozen" if node in frozen else "stable",
            "fixture_manifest": manifest, "seed": SEED, "freeze_expires": None}


def _rerun_until_green(suite, nodes, day_index, rng, frozen: set[str], actor, at) -> None:
    """A patch rejected at its commit, rerun twice: its flaky node passes the second time
    (a flip), and the board still rejects every attempt (SPEC 2.4a)."""
    touched = rng.sample([node for node in nodes if node not in frozen], 8)
    meta = {"patch": f"patch-{day_index}-{rng.randint(1, 999)}",
            "commit": f"{rng.getrandbits(40):010x}"}
    for attempt in range(3):
        records = [_record(node, "fail" if attempt == 0 and i == 0 else "pass", frozen)
                   for i, node in enumerate(touched)]
        signals_ingest(suite=suite, actor=actor, now=at + timedelta(minutes=20 * attempt),
                       body=json.dumps({**meta, "records": records,
                                        "evidence": f"ci/run-{77000 + 10 * day_index + attempt}"
                                        }).encode())


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
    """Owners quarantine a node the day its report fails, clear an entry a few days after it
    became ready (the fix proved by clean measurements), and renew one nearing its expiry
    while the fix is still in review."""
    for nodeid in failing:
        # Over the cap, or already open: as in real life, not every node gets in.
        with contextlib.suppress(ValidationError):
            quarantine_create(
                suite=suite, nodeid=nodeid, owner=rng.choice(OWNERS),
                expires=day + timedelta(days=10),
                evidence=f"https://ci.example.com/runs/{rng.randint(80000, 99999)}",
                n=200, fails=rng.randint(3, 12), seed_base=SEED,
                actor=rng.choice(OWNERS[:4]), today=day, now=now,
                note="Flaky under load; owner investigating.",
            )
    for entry in QuarantineEntry.objects.filter(suite=suite).open().select_related("node"):
        if entry.ready_to_clear:
            if (day - entry.ready_since.date()).days >= CLEARED_AFTER_READY:
                note = rng.choice(["Fixed the race.", "Fixed: the timeout was too tight."])
                quarantine_clear(entry=entry, note=note, actor="@owner", now=now)
        elif (entry.expires - day).days == 2:
            quarantine_renew(
                entry=entry, expires=day + timedelta(days=21),
                evidence=f"https://ci.example.com/runs/{rng.randint(100000, 199999)}",
                actor=entry.owner if entry.owner.startswith("@") else "@owner",
                today=day, now=now, note="Still flaky; the fix is in review.",
            )


def _clock(today: date):
    """The time of an upload on a day: as scheduled, but never after now."""
    latest = timezone.now() - timedelta(minutes=1)

    def at(day: date, hour: int, minute: int = 0) -> datetime:
        return min(datetime.combine(day, time(hour, minute), tzinfo=UTC), latest)

    return at


@transaction.atomic
def build_demo(today: date) -> Suite:
    suite = suite_create(slug="demo", name="Demo: payments service")
    suite.max_quarantined_share = 0.12
    suite.save()
    suite = fixture_pin_set(suite=suite, actor="@lead", manifest=MANIFEST, seed=SEED)
    for user, role in _users().values():
        member_set(suite=suite, user=user, role=role, actor="demo")
    # CI's uploads come with a real token of the suite, as Settings lists it.
    token = token_create(suite=suite, scope="write", actor="@lead", name="ci")[0]
    ci = token.label
    nodes = _node_ids()
    tier_rule_add(suite=suite, glob="tests/test_properties.py::*", tier=0, actor="@lead")
    tier_rule_add(suite=suite, glob="tests/pinned/*", tier=1, actor="@lead")
    rng = random.Random(SEED)
    flakes = Flakes(nodes["tier2"], rng)
    all_nodes = nodes["tier0"] + nodes["tier1"] + nodes["tier2"]
    start = today - timedelta(days=DAYS - 1)
    at = _clock(today)
    reruns = random.Random(SEED + 1)  # its own draws: the rest of the history stays as it was
    for i in range(DAYS):
        day = start + timedelta(days=i)
        outcome = report_ingest(suite=suite, body=_report_body(nodes["tier2"], flakes, i, rng),
                                actor=ci, now=at(day, 9, 30))
        failing = [m["nodeid"] for m in outcome.rows if m["reason"] == "over_budget"]
        _tend_ledger(suite, day, at(day, 11, 30), rng, failing)
        frozen = set(QuarantineEntry.objects.filter(suite=suite).live(day)
                     .values_list("node__nodeid", flat=True))
        for hour in (12, 16):
            signals_ingest(suite=suite, body=_signals_body(all_nodes, i, rng, frozen),
                           actor=ci, now=at(day, hour, rng.randint(0, 59)))
        if i in RETRY_DAYS:
            _rerun_until_green(suite, all_nodes, i, reruns, frozen, ci, at(day, 14))
    _births(suite, start, at, ci)
    _ensure_every_state(suite, today, nodes["tier2"], at(today, 8))
    _junit_history(suite, today, all_nodes, set(nodes["tier2"][::23]), flakes, rng, ci, at)
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


def _junit_history(suite, today, tests, under_load: set, flakes: Flakes, rng, actor: str,
                   at):
    """The JUnit files of the last JUNIT_DAYS days, of every test CI runs on main, through the
    same ingest as the API (the last day's run sizes the test set). A few tests flake now and
    then under CI's load only (a rerun passes them), as passive evidence shows and a
    measurement in isolation does not (``under_load``)."""
    for i in range(JUNIT_DAYS):
        day = today - timedelta(days=JUNIT_DAYS - 1 - i)
        day_index = DAYS - JUNIT_DAYS + i
        commit = f"{rng.getrandbits(40):010x}"
        for job in JUNIT_JOBS:
            cases = "".join(case for name in tests for case in
                            _junit_attempts(name, LOAD_FLAKE_RATE if name in under_load
                                            else flakes.rate(name, day_index), rng))
            xml = (f'<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests">'
                   f'<testsuite name="pytest">{cases}</testsuite></testsuites>').encode()
            junit_ingest(suite=suite, body=xml, actor=actor,
                         query={"commit": commit, "branch": "main", "job": job},
                         now=at(day, 10, 15))


def _ensure_every_state(suite, today, tier2, now: datetime):
    """Whatever the replay left, show one entry in each state, and one tier violation."""
    open_nodes = set(QuarantineEntry.objects.filter(suite=suite).open()
                     .values_list("node__nodeid", flat=True))
    spare = [n for n in tier2 if n not in open_nodes]
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
