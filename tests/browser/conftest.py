"""The browser journeys: Debian's Chromium, driven by Playwright, against a live board.

Chromium comes from ``apt-get install -y chromium`` (Playwright's own download is not
used). Without it the journeys are skipped, and the run says so at the end.

Playwright's event loop stays up from the first journey to the end of the session. While
it runs, the ORM would refuse to work in the test thread, and a second Playwright could
not start; so the journeys run after every other test, with DJANGO_ALLOW_ASYNC_UNSAFE set
from the first of them on.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Error, expect

from tests.helpers import quarantined

from .board import Board

CHROMIUM = shutil.which("chromium")
SKIPPED = "Chromium not found: apt-get install -y chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
HERE = Path(__file__).resolve().parent
JOURNEYS = pytest.StashKey[int]()
TIMEOUT_MS = 15_000  # generous: CI machines are often busy
# The ledger an owner acts on: @finley's entries, two expiring within 7 days and one later,
# by the days each has left.
EXPIRING = ("tests/test_cache.py::test_evicts_under_pressure",
            "tests/test_queue.py::test_drains_on_shutdown")
LATER = "tests/test_search.py::test_ranks_stably"
OWNER_LEDGER = {EXPIRING[0]: 3, EXPIRING[1]: 5, LATER: 20}

expect.set_options(timeout=TIMEOUT_MS)


def is_journey(item) -> bool:
    return HERE in Path(item.path).parents


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    # Last of the hooks: pytest-django sorts the items by their kind of database access,
    # which would otherwise put later groups' tests after the journeys.
    journeys = [item for item in items if is_journey(item)]
    if not journeys:
        return
    if CHROMIUM is None:
        for item in journeys:
            item.add_marker(pytest.mark.skip(reason=SKIPPED))
    chosen = set(journeys)
    items[:] = [item for item in items if item not in chosen] + journeys


def pytest_collection_finish(session):
    """The journeys that will run: a -m or -k selection may have left some out."""
    session.config.stash[JOURNEYS] = sum(1 for item in session.items if is_journey(item))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    count = config.stash.get(JOURNEYS, 0)
    if not count:
        return
    if CHROMIUM is None:
        terminalreporter.write_line(
            f"Browser journeys: {count} SKIPPED. {SKIPPED}", yellow=True, bold=True
        )
    else:
        terminalreporter.write_line(f"Browser journeys: {count} run in {CHROMIUM}")


@pytest.fixture(scope="session", autouse=True)
def _orm_beside_playwright():
    """Playwright's sync API keeps an asyncio loop running in this thread; the ORM calls
    the tests make between browser steps are synchronous and safe."""
    with pytest.MonkeyPatch.context() as patch:  # the session's: monkeypatch is a test's
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        yield


@pytest.fixture(autouse=True)
def _plain_static_files(settings):
    """The live server serves static files under their own names, not the manifest's."""
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def base_url(live_server):
    """The live board. (pytest-playwright's own fallback fixture is deprecated by pytest.)"""
    return live_server.url


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {
        **browser_context_args,
        "viewport": {"width": 1280, "height": 860},
        "locale": "en-US",
        "timezone_id": "UTC",
    }


@pytest.fixture
def owner_ledger(suite, owner, today):
    """OWNER_LEDGER's entries in the suite, by node."""
    return quarantined(suite, today, OWNER_LEDGER)


@pytest.fixture
def board(page, live_server, request):
    """The signed-out board in a fresh Chromium page. A journey ends with
    ``board.finish(name)``; one that fails on the way still leaves its last screen."""
    page.set_default_timeout(TIMEOUT_MS)
    watched = Board(page, live_server.url)
    yield watched
    if not watched.finished:
        with contextlib.suppress(Error):
            watched.screenshot(f"{request.module.__name__.rsplit('.', 1)[-1]}-failed")
