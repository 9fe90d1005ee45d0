"""What the tracker tests share: a suite with forty known nodes (a world's, built once for a
run of a module's tests: a tracker module takes ``build_world`` too), a fake tracker of each
kind on 127.0.0.1, a tracker set against it with a token the tests look for everywhere,
and sync_trackers run with its backoff's sleeps recorded, not slept."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command

from ledger.quarantine import quarantine_create
from tests.helpers import record_sleeps
from tests.local_server import serving
from tests.test_gate_status import FLAKY, forty_known
from tests.tracker_server import FakeTracker
from tests.world import people_world
from trackers.services import TrackerFields, tracker_set

TOKEN = "tok-7Hq9-secret-Zx42"
PROJECTS = {"github": "acme/shop", "gitlab": "acme/shop", "jira": "FLAKY"}
AUTH = {"github": ("authorization", f"Bearer {TOKEN}"),
        "gitlab": ("private-token", TOKEN),
        # base64 of "bot@acme.example:" + TOKEN
        "jira": ("authorization", "Basic Ym90QGFjbWUuZXhhbXBsZTp0b2stN0hxOS1zZWNyZXQtWng0Mg==")}


def build_world():
    """A tracker module's shared world (tests/world.py): the suite with its forty known
    nodes, built once for a run of the tests that ask for it."""
    world = people_world()
    world.known = forty_known(world.suite, cap=0.5)
    return world


@pytest.fixture
def known(settings, world, suite):
    """The suite with forty known nodes: the world's, but a test that commits
    (tests/test_trackers_race.py) makes its own."""
    settings.WEBHOOKS_ALLOW_PRIVATE_IPS = True
    settings.BASE_URL = "https://board.example"
    return world.known if world is not None else forty_known(suite, cap=0.5)


@pytest.fixture(params=["github", "gitlab", "jira"])
def fake(request):
    fake = FakeTracker(request.param)
    with serving(fake.server):
        yield fake


@pytest.fixture
def sleeps(monkeypatch):
    return record_sleeps(monkeypatch, "trackers.management.commands.sync_trackers")


def set_tracker(suite, fake, **switches):
    return tracker_set(suite=suite, fields=TrackerFields(
        kind=fake.kind, project=PROJECTS[fake.kind], site=fake.site,
        email="bot@acme.example" if fake.kind == "jira" else "", **switches),
        token=TOKEN, actor="@lea")


def quarantined(suite, today, i=1, days=10, owner="@finley"):
    return quarantine_create(suite=suite, nodeid=FLAKY.format(i), owner=owner,
                             expires=today + timedelta(days=days), evidence="ci/run-7",
                             actor="@finley", today=today, n=200, fails=5)


def sync_trackers(fails: bool = False) -> str:
    out = io.StringIO()
    if fails:
        with pytest.raises(CommandError) as failed:
            call_command("sync_trackers", stdout=out, stderr=io.StringIO())
        return out.getvalue() + str(failed.value)
    call_command("sync_trackers", stdout=out, stderr=io.StringIO())
    return out.getvalue()
