"""What the tests share: people (a lead, an owner, a viewer, an outsider, staff) and suites;
the furnished suite the access matrices ask about; the board, as CI calls it (in the test's
own thread, or the live server over HTTP)."""

import subprocess
import sys

import pytest
from django.conf import settings
from django.utils import timezone

from tests.client_build import pytest_sessionstart  # noqa: F401 (builds the client first)
from tests.clock import (  # noqa: F401 (the frozen clock: tests/clock.py)
    PROCESS_CLOCK,
    clock,
    pytest_configure,
    pytest_report_header,
    pytest_unconfigure,
)
from tests.compile_share import compile_first
from tests.flush import _flush_keeps_content_types  # noqa: F401 (tests/flush.py)
from tests.lanes import pytest_ignore_collect  # noqa: F401 (modules -m leaves out whole)
from tests.oidc_issuer import issuer, trusted  # noqa: F401 (trusted CI's local issuer)
from tests.worker_exit import end_at_once
from tests.world import (  # noqa: F401 (the shared world: tests/world.py)
    PASSWORD,
    _world_closed_at_the_end,
    _world_run,
    clock_start,
    make_person,
    make_suite,
    pytest_collection_modifyitems,
    pytest_runtest_teardown,
    uses_world,
    world,
)

# As settings.py leaves them: pytest-django's --nomigrations replaces them for the run.
MIGRATION_MODULES = settings.MIGRATION_MODULES


def pytest_collection(session):
    """In each xdist worker, before it collects: its share of the compiling first
    (tests/compile_share.py), and its process to end at once when it is done
    (tests/worker_exit.py)."""
    end_at_once(session)
    compile_first(session)


@pytest.fixture(autouse=True)
def _no_outgoing_http(monkeypatch):
    """Tests never reach the network: any attempt to open a non-local socket fails."""
    import socket

    real_connect = socket.socket.connect

    def guarded(self, address):
        host = address[0] if isinstance(address, tuple) else address
        local = ("127.0.0.1", "localhost", "::1")
        if isinstance(host, str) and host not in local and "/" not in host:
            raise OSError(f"tests may not connect to {host}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


@pytest.fixture(autouse=True, scope="session")
def _static_files_of_its_own(tmp_path_factory):
    """The run's collected static files are its own, never the checkout's ``staticfiles/``:
    each test client's WhiteNoise lists that folder, and a ``make run`` (one of the tests, or a
    developer's) collects into it meanwhile, so a file listed could be gone when looked at.
    The processes the tests start (``make run``, gunicorn) inherit the folder."""
    from django.test import override_settings

    root = tmp_path_factory.mktemp("static") / "collected"
    with pytest.MonkeyPatch.context() as patch, override_settings(STATIC_ROOT=root):
        patch.setenv("STATIC_ROOT", str(root))  # the session's: monkeypatch is a test's
        yield root


@pytest.fixture(autouse=True, scope="session")
def _fast_password_hashing():
    """The people fixtures hash a password each; the real hasher's cost buys tests nothing.
    Set once for the session: changing a setting for each test costs more than the hash."""
    from django.test import override_settings

    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


LOAD_SUMMARY = pytest.StashKey[list[str]]()


@pytest.fixture
def load_summary(request) -> list[str]:
    """Lines a load test leaves for the end of the run, where pytest shows them (it
    captures what the test prints): requests sent, server errors, deadlocks."""
    return request.config.stash.setdefault(LOAD_SUMMARY, [])


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    for line in config.stash.get(LOAD_SUMMARY, []):
        terminalreporter.write_line(line)


@pytest.fixture
def today():
    """The board's date in this test, where the clock stands still (the autouse ``clock``
    of tests/clock.py runs before any other fixture of the test)."""
    return timezone.now().date()


def _world(request):
    """The test's copy of the shared world (tests/world.py), if it asks for it: the people
    and suites of the fixtures below are then the world's, those it holds."""
    return request.getfixturevalue("world") if uses_world(request.node) else None


def _suite(request, name):
    found = getattr(_world(request), name, None)
    return found if found is not None else make_suite(name)


@pytest.fixture
def suite(request, db):
    return _suite(request, "suite")


@pytest.fixture
def other_suite(request, db):
    return _suite(request, "other_suite")


def _person(request, name, **suites):
    found = _world(request)
    person = getattr(found, "users", {}).get(name)
    return person if person is not None else make_person(name, suites)


@pytest.fixture
def lead(request, suite):
    return _person(request, "lead", suite=suite)


@pytest.fixture
def owner(request, suite):
    return _person(request, "owner", suite=suite)


@pytest.fixture
def viewer(request, suite):
    return _person(request, "viewer", suite=suite)


@pytest.fixture
def outsider(request, suite, other_suite):
    return _person(request, "outsider", other_suite=other_suite)


@pytest.fixture
def staff(request, db):
    return _person(request, "staff")


@pytest.fixture(scope="session")
def django_db_use_migrations(request):
    """The test database's tables come from the migrations, as a deployed board's do. A
    run that asks for ``--nomigrations`` (the fast lane) on SQLite makes them from the
    models at once instead, 2 s less in each worker: on SQLite the migrations make no more
    than the models say (tests/test_schema_from_models.py holds the two equal).
    PostgreSQL always migrates: its migrations add triggers and storage options."""
    from django.db import connection

    return not request.config.getvalue("nomigrations") or connection.vendor != "sqlite"


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_use_migrations, django_db_blocker):
    """pytest-django's test database, whose teardown first closes this process's connection
    listening for row changes (ledger/changes.py): PostgreSQL drops no database in use.
    Made from the models, it records the migrations as applied, as a migrated one does,
    and leaves them where the tests of them find them."""
    from ledger.changes import stop_listening

    settings.MIGRATION_MODULES = MIGRATION_MODULES
    if not django_db_use_migrations:
        with django_db_blocker.unblock():
            record_migrations_applied()
    yield
    stop_listening()


def record_migrations_applied():
    from django.db import connections
    from django.db.migrations.loader import MigrationLoader
    from django.db.migrations.recorder import MigrationRecorder

    for connection in connections.all(initialized_only=True):
        recorder = MigrationRecorder(connection)
        recorder.ensure_schema()
        for (app, name), migration in MigrationLoader(connection).disk_migrations.items():
            # As migrate records a squashed migration: the ones it replaces too, or the
            # loader reads it as unapplied, and the migrations after it as applied on nothing.
            for replaced_app, replaced in migration.replaces:
                recorder.record_applied(replaced_app, replaced)
            recorder.record_applied(app, name)


@pytest.fixture(scope="session")
def _one_request_at_a_time():
    """On an in-memory SQLite database, the live server answers one request at a time.
    Its request threads would share the one connection, and a page and the panel it
    fetches on load, read at once, garble each other's rows (an IndexError deep in the
    ORM). Django's single-threaded server closes each connection after its answer, so a
    browser's keep-alive never holds it."""
    from django.core.servers.basehttp import WSGIServer
    from django.db import connection
    from django.test.testcases import LiveServerThread

    class OneAtATime(WSGIServer):
        # The thread that serves already holds the shared connection (LiveServerThread.run).
        def __init__(self, *args, connections_override=None, **kwargs):
            super().__init__(*args, **kwargs)

    threaded = LiveServerThread.server_class
    if connection.vendor == "sqlite" and connection.is_in_memory_db():
        LiveServerThread.server_class = OneAtATime
    yield
    LiveServerThread.server_class = threaded


@pytest.fixture(scope="session")
def live_server(django_db_setup, _one_request_at_a_time, live_server):
    """pytest-django's live server, started only once the test database exists, so that
    its threads share the in-memory SQLite connection instead of each leaking their own,
    and (on SQLite) answering one request at a time."""
    return live_server


@pytest.fixture
def live_board(live_server):
    """The live board, called over HTTP as CI calls it (tests/api_http.py's ``Board``): for
    what only a real server and real commits show."""
    from tests.api_http import Board  # here: a test that calls no API loads none of it

    return Board(live_server.url)


@pytest.fixture
def board(request, db):
    """The board as CI calls it, answering in the test's own thread and transaction
    (tests/api_http.py's ``InProcessBoard``): no server, and nothing to empty after the test.
    A test that runs the live server anyway (for the CI client, a browser) calls that, the
    board they see."""
    if "live_server" in request.fixturenames:
        return request.getfixturevalue("live_board")
    from tests.api_http import InProcessBoard

    return InProcessBoard()


@pytest.fixture
def token(suite):
    """A write token of the suite, as a CI job holds it."""
    from tests.api_http import new_token

    return new_token(suite, "write")


@pytest.fixture
def client_for(client):
    """client_for(user) is a test client signed in as that user (None: signed out)."""

    def sign_in(user):
        if settings.SESSION_COOKIE_NAME in client.cookies:  # a client never signed in has none
            client.logout()
        if user is not None:
            client.force_login(user)
        return client

    return sign_in


@pytest.fixture
def client_script(live_board, tmp_path):
    """The CI client as CI gets it: fetched from the live board with nothing but HTTP."""
    answer = live_board.get("/ci/flakeboard_ci.py")
    assert answer.status == 200
    assert "attachment" in answer.headers["Content-Disposition"]
    path = tmp_path / "flakeboard_ci.py"
    path.write_bytes(answer.raw)
    return path


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    """A Redis server of this test worker's (tests/redis_server.py): its redis:// URL."""
    from tests.redis_server import REDIS_SERVER, SKIPPED, redis_server

    if REDIS_SERVER is None:
        pytest.skip(SKIPPED)
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture
def dead_url():
    """The address of a board that is not there: a closed port on 127.0.0.1."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def run(client_script, live_server, suite, tmp_path):
    """run(*args, token=..., python=..., **env) runs the CI client in tmp_path, with no
    site-packages and only the environment given."""
    from tests.api_http import new_token

    def run_client(*args, token=None, python=sys.executable, **env):
        environment = {"PATH": "/usr/bin:/bin", "FLAKEBOARD_URL": live_server.url,
                       "FLAKEBOARD_TOKEN": token or new_token(suite, "write"),
                       **PROCESS_CLOCK, **env}
        return subprocess.run(
            [python, "-I", "-S", str(client_script), *args],
            cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=60,
        )

    return run_client
