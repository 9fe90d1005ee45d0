"""The tests' clock (time-machine). conftest.py takes its hooks and fixture from here.

- Each test runs on a clock frozen at the instant it starts: a test that reads the date
  twice (its ``today`` fixture, then the service it calls) reads one date, even when the
  run crosses midnight UTC. A test that needs time to pass moves the clock itself
  (``clock.shift(seconds)``); ``time.sleep`` and the monotonic clocks are not frozen.
- ``FLAKEBOARD_TEST_CLOCK=23:59:50`` (a UTC time of today, or a whole ISO instant) starts the
  session's clock there, ticking, before the tests are collected: module-level dates are read
  just before midnight and the tests run just after it. CI's SQLite lane runs the suite so
  (.ci/run), the proof that no test depends on the hour it runs at.

Under ``FLAKEBOARD_TEST_CLOCK`` the CI client, which the tests run as CI runs it and whose
dates they compare with the board's, runs on the session's clock too: its environment takes
``PROCESS_CLOCK``, with which libfaketime (Debian's ``faketime``) moves a process's clock by
the same offset. Without libfaketime such a run stops at once and says so. Chromium (which
does not start under libfaketime) and the boards the slow tests serve with gunicorn keep
the machine's clock: no test compares a date of theirs with its own.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, time
from pathlib import Path

import pytest
import time_machine

CLOCK_VARIABLE = "FLAKEBOARD_TEST_CLOCK"
SESSION_TRAVEL = pytest.StashKey[time_machine.travel]()
FAKETIME_LIBRARIES = "/usr/lib/*/faketime/libfaketime.so.1"

# What a process a test starts needs in its environment to share the session's clock:
# nothing unless FLAKEBOARD_TEST_CLOCK is set (pytest_configure fills it then).
PROCESS_CLOCK: dict[str, str] = {}


def process_clock(offset_seconds: float) -> dict[str, str]:
    """The environment that moves a process's clock by ``offset_seconds``, as
    time-machine moves this one's (libfaketime)."""
    libraries = sorted(Path("/").glob(FAKETIME_LIBRARIES.lstrip("/")))
    if not libraries:
        raise pytest.UsageError(
            f"{CLOCK_VARIABLE} moves the clock of the processes the tests start with "
            "libfaketime, which is not installed: apt-get install faketime")
    # The monotonic clocks move too: with FAKETIME_DONT_FAKE_MONOTONIC, libfaketime 0.9.10
    # fails Python's time.sleep (EINVAL).
    return {"LD_PRELOAD": str(libraries[0]), "FAKETIME": f"{round(offset_seconds):+d}"}


def session_start(value: str, now: datetime) -> datetime:
    """The instant ``FLAKEBOARD_TEST_CLOCK`` names: ``HH:MM[:SS]`` is that UTC time on
    ``now``'s date; anything else must be an ISO instant (UTC when it names no offset)."""
    try:
        return datetime.combine(now.astimezone(UTC).date(), time.fromisoformat(value), UTC)
    except ValueError:
        pass
    try:
        instant = datetime.fromisoformat(value)
    except ValueError:
        raise pytest.UsageError(
            f"{CLOCK_VARIABLE}={value!r} is neither a UTC time (23:59:50) "
            "nor an ISO instant (2026-12-31T23:59:50Z)") from None
    return instant if instant.tzinfo else instant.replace(tzinfo=UTC)


def pytest_configure(config):
    value = os.environ.get(CLOCK_VARIABLE, "").strip()
    if not value:
        return
    now = datetime.now(UTC)
    start = session_start(value, now)
    PROCESS_CLOCK.update(process_clock((start - now).total_seconds()))
    travel = time_machine.travel(start, tick=True)
    travel.start()
    config.stash[SESSION_TRAVEL] = travel


def pytest_unconfigure(config):
    travel = config.stash.get(SESSION_TRAVEL, None)
    if travel is not None:
        travel.stop()


def pytest_report_header(config):
    if SESSION_TRAVEL in config.stash:
        return f"clock: started at {os.environ[CLOCK_VARIABLE]} UTC ({CLOCK_VARIABLE}), ticking"
    return None


@pytest.fixture(autouse=True)
def clock(request):
    """The clock frozen at this test's start; ``clock.shift(seconds)`` moves it. A fixture
    ``clock_start`` the test asks for may name another instant: a test on the shared
    ``world`` starts at the instant the world was built (tests/world.py)."""
    # Looked up only for a test that asks for it (through the world): a lookup costs each
    # test as much as the clock itself.
    start = (request.getfixturevalue("clock_start")
             if "clock_start" in request.fixturenames else None)
    with time_machine.travel(start or datetime.now(UTC), tick=False) as traveller:
        yield traveller
