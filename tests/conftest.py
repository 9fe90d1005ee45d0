"""People and suites shared by the tests: a lead, an owner, a viewer and an outsider."""

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from ledger.models import Membership, Role
from ledger.suites import suite_create

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


@pytest.fixture
def today():
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


@pytest.fixture(scope="session")
def live_server(django_db_setup, live_server):
    """pytest-django's live server, started only once the test database exists, so that
    its threads share the in-memory SQLite connection instead of each leaking their own."""
    return live_server


@pytest.fixture
def client_for(client):
    """client_for(user) is a test client signed in as that user (None: signed out)."""

    def sign_in(user):
        client.logout()
        if user is not None:
            client.force_login(user)
        return client

    return sign_in
