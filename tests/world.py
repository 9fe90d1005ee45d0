"""The ``world`` fixture's suite (conftest.py), built once for a run of tests that ask for it
instead of once for each of them.

A run of tests is the tests of one module that a worker runs one after another, each asking
for ``world``. The first of them builds the world in a transaction of its own, opened before
the test's (pytest-django's), so that each test's changes are rolled back to a savepoint
and the next test finds the world as it was built. The transaction is rolled back when the
next test does not ask for the world, or is in another module, and at the end of the run:
no other test sees the world's rows. The tables of the access matrices, the odd numbers and
the calendar's edges ask for it in hundreds of tests, each of which used to build it.

A module that defines a ``build_world`` of its own gets that world instead: a larger one
(the node page's long history on top of it), or another (a suite with a year of history,
and nothing else; ``people_world`` gives the suites and people a module names). Its tests
ask for ``world`` all the same; the fixtures of the people and suites answer from it
(conftest.py), and a person or suite it does not hold is made for the test as before.

pytest-randomly shuffles the tests of a module; ``pytest_collection_modifyitems`` then puts
the module's tests that ask for the world next to each other, each side in its shuffled
order, so that a module's world is built once in each worker, not once for every stretch
of its tests between two that do not ask for it.

Each test on the world gets a copy of it (its rows as Python objects too), and runs on the
clock frozen at the instant the world was built (tests/clock.py): its ``today`` is the
world's. A test that commits (pytest-django's transactional tests) runs on no world.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
import time_machine
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.test import Client
from django.utils import timezone

from ledger.models import ApiToken, Membership, Role
from ledger.quarantine import quarantine_create
from ledger.suites import suite_create
from ledger.tiers import tier_rule_add
from ledger.tokens import token_create, token_revoke
from runs.ingest import report_ingest, signals_ingest
from tests.helpers import body, measurement, record

PASSWORD = "correct horse battery staple"

# The people of the fixtures of the same names, by fixture: (user name, their suite's
# fixture, role, other fields).
PEOPLE = {
    "lead": ("lea", "suite", Role.LEAD, {}),
    "owner": ("finley", "suite", Role.OWNER, {}),
    "viewer": ("vic", "suite", Role.VIEWER, {}),
    "outsider": ("otto", "other_suite", Role.LEAD, {}),
    "staff": ("stella", None, None, {"is_staff": True, "is_superuser": True}),
}
SUITES = {"suite": ("acme", "Acme payments"), "other_suite": ("other", "Other team")}


def make_suite(name: str):
    slug, title = SUITES[name]
    return suite_create(slug=slug, name=title)


def make_person(name: str, suites: dict):
    """The person of that fixture's name, a member of their suite (of ``suites``)."""
    username, suite, role, extra = PEOPLE[name]
    user = get_user_model().objects.create_user(username=username, password=PASSWORD, **extra)
    if suite is not None:
        Membership.objects.create(suite=suites[suite], user=user, role=role)
    return user


def people_world(*people: str, suites: tuple[str, ...] = ("suite",)) -> SimpleNamespace:
    """A world of ``suites`` and ``people`` (fixture names) and nothing else, made as their
    fixtures make them: the start of a module's own ``build_world``."""
    made = {name: make_suite(name) for name in suites}
    return SimpleNamespace(
        today=timezone.now().date(), users={name: make_person(name, made) for name in people},
        **made)


def module_world(name: str, add) -> tuple:
    """A module's own world and its fixture, as ``build_world, <name> = module_world(name,
    add)``: the world is the suite (``people_world()``) holding ``add(suite, today)`` as
    ``name``, built once for a run of the module's tests that ask for it, and the fixture
    ``name`` gives it to a test. The data its tests only read, or change and see undone."""

    def build_world() -> SimpleNamespace:
        world = people_world()
        setattr(world, name, add(world.suite, world.today))
        return world

    @pytest.fixture(name=name)
    def built(world):
        return getattr(world, name)

    return build_world, built


def build_world() -> SimpleNamespace:
    """The suite with one of everything a caller may ask for: a report, a verdict batch
    (of a patch), an open entry, a tier rule; the people, each with a session signed in;
    and a token of every kind (read, write, another suite's, a revoked one), by
    plaintext."""
    today = timezone.now().date()
    suites = {name: make_suite(name) for name in SUITES}
    people = {name: make_person(name, suites) for name in PEOPLE}
    suite, other_suite = suites["suite"], suites["other_suite"]
    flaky = "tests/test_flaky.py::test_once"
    rows = [measurement(f"tests/test_{i}.py::test_ok") for i in range(40)]
    rows.append(measurement(flaky, fails=9))
    report = report_ingest(suite=suite, body=body(rows), actor="ci").upload
    batch = signals_ingest(suite=suite, body=body({"patch": "feature/retry", "commit": "c1",
                                                   "records": [record(flaky)]}),
                           actor="ci").upload
    entry = quarantine_create(suite=suite, nodeid=flaky, owner="@finley",
                              expires=today + timedelta(days=3), evidence="ci/run-1",
                              actor="@finley", today=today)
    rule = tier_rule_add(suite=suite, glob="tests/test_properties.py::*", tier=0,
                         actor="@lea")
    read_raw = token_create(suite=suite, scope="read", actor="@lea")[1]
    write_raw = token_create(suite=suite, scope="write", actor="@lea")[1]
    other_raw = token_create(suite=other_suite, scope="write", actor="@otto")[1]
    revoked_raw = token_create(suite=suite, scope="write", actor="@lea")[1]
    token_revoke(token=ApiToken.objects.get(prefix=revoked_raw[:12]), actor="@lea")
    viewer = people["viewer"]
    return SimpleNamespace(
        suite=suite, other_suite=other_suite, today=today, node=flaky, report=report,
        batch=batch, entry=entry, rule=rule,
        viewer=viewer, viewer_membership=Membership.objects.get(user=viewer),
        read_token=ApiToken.objects.get(prefix=read_raw[:12]),
        users={name: people[name] for name in ("outsider", "viewer", "owner", "lead", "staff")},
        tokens={"read": read_raw, "write": write_raw, "other": other_raw,
                "revoked": revoked_raw},
        sessions={name: signed_in(user) for name, user in people.items()},
    )


def signed_in(user) -> str:
    """The key of a session signed in as ``user``, as a browser's cookie holds it."""
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


@dataclass
class Built:
    """A world built for a run of tests, in its transaction."""

    module: str
    instant: datetime
    world: SimpleNamespace
    atomic: transaction.Atomic
    blocker: object  # pytest-django's django_db_blocker

    def close(self) -> None:
        with self.blocker.unblock():
            transaction.set_rollback(True)
            self.atomic.__exit__(None, None, None)


BUILT: list[Built] = []  # this worker's open world, if any


def uses_world(item) -> bool:
    """Whether the test runs on a world: it asks for one, and does not commit (a world's
    rows are one transaction's, which a test that commits would end)."""
    return "world" in getattr(item, "fixturenames", ()) and not _commits(item)


def _transactional(item) -> bool:
    marker = item.get_closest_marker("django_db")
    return bool(marker and (marker.kwargs.get("transaction")
                            or marker.kwargs.get("reset_sequences")))


def _commits(item) -> bool:
    """pytest-django's transactional tests: by their mark, or by the fixtures they ask for."""
    fixtures = getattr(item, "fixturenames", ())
    return (_transactional(item) or "transactional_db" in fixtures
            or "live_server" in fixtures)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items) -> None:
    """In each stretch of one module's tests (pytest-django orders the transactional ones
    last), the tests that ask for the world first, then the others, each in its order."""
    ordered = []
    for _, stretch in itertools.groupby(
            items, key=lambda item: (item.nodeid.split("::")[0], _commits(item))):
        stretch = list(stretch)
        ordered += [item for item in stretch if uses_world(item)]
        ordered += [item for item in stretch if not uses_world(item)]
    items[:] = ordered


def world_for(request) -> Built | None:
    """The world of this test's run, built if the run starts here; None for a test that
    does not ask for the world."""
    if not uses_world(request.node):
        return None
    module = request.node.nodeid.split("::")[0]
    if BUILT and BUILT[0].module == module:
        return BUILT[0]
    close_world()
    request.getfixturevalue("_world_closed_at_the_end")
    blocker = request.getfixturevalue("django_db_blocker")
    instant = datetime.now(UTC)
    with blocker.unblock():
        atomic = transaction.atomic()
        atomic.__enter__()
        try:
            with time_machine.travel(instant, tick=False):
                world = getattr(request.module, "build_world", build_world)()
        except BaseException:
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)
            raise
    BUILT.append(Built(module, instant, world, atomic, blocker))
    return BUILT[0]


def close_world() -> None:
    while BUILT:
        BUILT.pop().close()


@pytest.fixture(scope="session")
def _world_closed_at_the_end(django_db_setup):
    """The last world's transaction ends before the test database goes."""
    yield
    close_world()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After a test's own teardown (its transaction rolled back), the world's transaction
    ends unless the next test goes on with it."""
    try:
        return (yield)
    finally:
        same_run = (nextitem is not None and uses_world(nextitem)
                    and nextitem.nodeid.split("::")[0] == item.nodeid.split("::")[0])
        if not same_run:
            close_world()


@pytest.fixture
def _world_run(request, _fast_password_hashing) -> Built | None:
    """The world of this test's run (None when it does not ask for it), its people's
    passwords hashed by the tests' fast hasher (conftest.py)."""
    return world_for(request)


@pytest.fixture
def clock_start(_world_run) -> datetime | None:
    """The instant the clock of this test starts at (tests/clock.py): the world's, for a test
    on it. The clock, set first, looks it up in a test that asks for the world, so the
    world's transaction is opened before the test's."""
    return _world_run.instant if _world_run is not None else None


@pytest.fixture
def world(_world_run, clock_start, db):
    """The shared world (build_world): this test's own copy of it. None in a test that
    commits: a fixture built on the world then builds its rows for that test alone (the
    digests' ledger of tests/test_notify_email.py, which tests/test_job_locks.py asks for)."""
    return copy.deepcopy(_world_run.world) if _world_run is not None else None
