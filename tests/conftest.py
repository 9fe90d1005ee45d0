"""What the tests share: people (a lead, an owner, a viewer, an outsider, staff) and suites;
the furnished suite the access matrices ask about; the live board, as CI calls it."""

import subprocess
import sys
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from ledger.models import ApiToken, Membership, Role
from ledger.quarantine import quarantine_create
from ledger.suites import suite_create
from ledger.tiers import tier_rule_add
from ledger.tokens import token_create, token_revoke
from runs.ingest import report_ingest, signals_ingest
from tests.client_build import pytest_sessionstart  # noqa: F401 (builds the client first)
from tests.clock import (  # noqa: F401 (the frozen clock: tests/clock.py)
    PROCESS_CLOCK,
    clock,
    pytest_configure,
    pytest_report_header,
    pytest_unconfigure,
)
from tests.helpers import body, measurement, record
from tests.lanes import pytest_ignore_collect  # noqa: F401 (modules -m leaves out whole)

PASSWORD = "correct horse battery staple"



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


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """The people fixtures hash a password each; the real hasher's cost buys tests nothing."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


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


@pytest.fixture
def suite(db):
    return suite_create(slug="acme", name="Acme payments")


@pytest.fixture
def other_suite(db):
    return suite_create(slug="other", name="Other team")


def _user(username, suite=None, role=None, **extra):
    user = get_user_model().objects.create_user(username=username, password=PASSWORD, **extra)
    if suite is not None:
        Membership.objects.create(suite=suite, user=user, role=role)
    return user


@pytest.fixture
def lead(suite):
    return _user("lea", suite, Role.LEAD)


@pytest.fixture
def owner(suite):
    return _user("finley", suite, Role.OWNER)


@pytest.fixture
def viewer(suite):
    return _user("vic", suite, Role.VIEWER)


@pytest.fixture
def outsider(suite, other_suite):
    return _user("otto", other_suite, Role.LEAD)


@pytest.fixture
def staff(db):
    return _user("stella", is_staff=True, is_superuser=True)


@pytest.fixture
def world(suite, other_suite, lead, owner, viewer, outsider, staff, today):
    """The suite with one of everything a caller may ask for: a report, a verdict batch
    (of a patch), an open entry, a tier rule; the people; and a token of every kind (read,
    write, another suite's, a revoked one), by plaintext."""
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
    return SimpleNamespace(
        suite=suite, other_suite=other_suite, today=today, node=flaky, report=report,
        batch=batch, entry=entry, rule=rule,
        viewer=viewer, viewer_membership=Membership.objects.get(user=viewer),
        read_token=ApiToken.objects.get(prefix=read_raw[:12]),
        users={"outsider": outsider, "viewer": viewer, "owner": owner, "lead": lead,
               "staff": staff},
        tokens={"read": read_raw, "write": write_raw, "other": other_raw,
                "revoked": revoked_raw},
    )


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup):
    """pytest-django's test database, whose teardown first closes this process's connection
    listening for row changes (ledger/changes.py): PostgreSQL drops no database in use."""
    from ledger.changes import stop_listening

    yield
    stop_listening()


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
def board(live_server):
    """The live board, called over HTTP as CI calls it."""
    from tests.api_http import Board  # here: a test that calls no API loads none of it

    return Board(live_server.url)


@pytest.fixture
def token(suite):
    """A write token of the suite, as a CI job holds it."""
    from tests.api_http import new_token

    return new_token(suite, "write")


@pytest.fixture
def client_for(client):
    """client_for(user) is a test client signed in as that user (None: signed out)."""

    def sign_in(user):
        client.logout()
        if user is not None:
            client.force_login(user)
        return client

    return sign_in


@pytest.fixture
def client_script(board, tmp_path):
    """The CI client as CI gets it: fetched from the board with nothing but HTTP."""
    answer = board.get("/ci/flakeboard_ci.py")
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
