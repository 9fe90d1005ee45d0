"""Which database a request reads (web/read_routing.py), the router that follows it and
what it does when the replica is down (web/replica.py): the decisions alone, without a
replica. tests/test_read_replica.py runs them on a real one."""

from __future__ import annotations

import logging

import pytest
from django.conf import settings
from django.core.exceptions import MiddlewareNotUsed
from django.db import OperationalError, connections
from django.http import HttpResponse
from django.test import RequestFactory

from flakeboard.api import api
from web.metrics import REGISTRY
from web.read_routing import MARK_COOKIE, PRIMARY, REPLICA, ROUTE, ReadRouting, read_alias
from web.replica import (
    LOG_EVERY_SECONDS,
    RETRY_SECONDS,
    ReadReplicaRouter,
    ReplicaHealth,
    same_database,
)

# method, path, wrote within READ_AFTER_WRITE_SECONDS -> the database it reads
DECISIONS = [
    ("GET", "/suites/acme/", False, REPLICA),
    ("GET", "/suites/acme/flaky/", False, REPLICA),
    ("HEAD", "/suites/acme/flaky/", False, REPLICA),
    ("GET", "/suites/acme/nodes/tests/test_a.py::test_b/", False, REPLICA),
    ("GET", "/suites/acme/reports/", False, REPLICA),
    ("GET", "/api/v1/suites/acme/targets", False, REPLICA),
    ("GET", "/api/v1/suites/acme/trends", False, REPLICA),
    ("GET", "/", False, REPLICA),
    # a client that just wrote reads what it wrote
    ("GET", "/suites/acme/flaky/", True, PRIMARY),
    ("GET", "/api/v1/suites/acme/targets", True, PRIMARY),
    # writes, and every read of a write request
    ("POST", "/suites/acme/flaky/measure/", False, PRIMARY),
    ("POST", "/api/v1/suites/acme/reports", False, PRIMARY),
    ("POST", "/api/v1/suites/acme/junit", False, PRIMARY),
    ("PUT", "/api/v1/suites/acme/codeowners", False, PRIMARY),
    ("DELETE", "/suites/acme/", False, PRIMARY),
    ("OPTIONS", "/suites/acme/", False, PRIMARY),
    # the gate's reads: what decides a verdict or an upload's answer
    ("GET", "/api/v1/suites/acme/ledger", False, PRIMARY),
    ("GET", "/api/v1/suites/acme/status", False, PRIMARY),
    ("GET", "/api/v1/suites/acme/reports/12", False, PRIMARY),
    ("GET", "/api/v1/suites/acme/verdicts", False, PRIMARY),
    ("GET", "/api/v1/token", False, PRIMARY),
    # the board's machinery
    ("GET", "/admin/ledger/suite/", False, PRIMARY),
    ("GET", "/accounts/login/", False, PRIMARY),
    ("GET", "/healthz", False, PRIMARY),
    ("GET", "/metrics", False, PRIMARY),
]


@pytest.mark.parametrize(("method", "path", "wrote", "alias"), DECISIONS)
def test_where_a_request_reads(method, path, wrote, alias):
    assert read_alias(method, path, wrote) == alias


# Each GET of the API, decided on purpose: a new one fails here until it is.
API_READS = {
    "/api/v1/token": PRIMARY,
    "/api/v1/suites/{suite}/ledger": PRIMARY,
    "/api/v1/suites/{suite}/status": PRIMARY,
    "/api/v1/suites/{suite}/reports": PRIMARY,
    "/api/v1/suites/{suite}/reports/{id}": PRIMARY,
    "/api/v1/suites/{suite}/verdicts": PRIMARY,
    "/api/v1/suites/{suite}/verdicts/{id}": PRIMARY,
    "/api/v1/suites/{suite}/targets": REPLICA,
    "/api/v1/suites/{suite}/trends": REPLICA,
    "/api/v1/suites/{suite}/entries/{id}/events": REPLICA,
}


def test_every_read_of_the_api_is_decided():
    paths = api.get_openapi_schema()["paths"]
    gets = {path for path, operations in paths.items() if "get" in operations}
    assert gets == set(API_READS)
    for path, alias in API_READS.items():
        assert read_alias("GET", path.format(suite="acme", id=7), False) == alias, path


@pytest.fixture
def with_replica(monkeypatch):
    """As if the settings named a replica (nothing here reads it)."""
    monkeypatch.setattr("web.read_routing.replica_configured", lambda: True)


def serve(request, seen: list):
    """The middleware around a view that notes where the request reads."""
    def view(request):
        seen.append(ROUTE.get())
        return HttpResponse()

    return ReadRouting(view)(request)


def test_the_middleware_is_left_out_without_a_replica():
    with pytest.raises(MiddlewareNotUsed):
        ReadRouting(lambda request: HttpResponse())


def test_a_write_marks_its_client_for_a_while(with_replica, clock):
    factory, seen = RequestFactory(), []
    answer = serve(factory.post("/suites/acme/flaky/measure/"), seen)
    mark = answer.cookies[MARK_COOKIE]
    assert mark["max-age"] == settings.READ_AFTER_WRITE_SECONDS and mark["httponly"]
    assert MARK_COOKIE not in serve(factory.get("/suites/acme/"), seen).cookies
    marked = factory.get("/suites/acme/")
    marked.COOKIES[MARK_COOKIE] = mark.value
    serve(marked, seen)
    forged = factory.get("/suites/acme/")
    forged.COOKIES[MARK_COOKIE] = "1"
    serve(forged, seen)
    clock.shift(settings.READ_AFTER_WRITE_SECONDS + 1)
    serve(marked, seen)
    assert seen == [PRIMARY, REPLICA, PRIMARY, REPLICA, REPLICA]
    assert ROUTE.get() == PRIMARY  # cleared after each request


def test_the_route_is_cleared_after_a_request_that_raised(with_replica):
    def view(request):
        raise RuntimeError("broken page")

    with pytest.raises(RuntimeError):
        ReadRouting(view)(RequestFactory().get("/suites/acme/"))
    assert ROUTE.get() == PRIMARY


class FakeConnection:
    """The replica's connection: it answers or not, as ``up`` says."""

    def __init__(self):
        self.up = True
        self.connects = 0
        self.closed = 0

    def close_if_health_check_failed(self):
        pass

    def ensure_connection(self):
        self.connects += 1
        if not self.up:
            raise OperationalError('connection to server at "10.0.0.9", port 5432 failed\n'
                                   "Is the server running on that host?")

    def close(self):
        self.closed += 1


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def fallbacks() -> float:
    return REGISTRY.get_sample_value("flakeboard_replica_fallbacks_total")


@pytest.fixture
def health(monkeypatch):
    connection, clock = FakeConnection(), Clock()
    health = ReplicaHealth(connection=lambda: connection, clock=clock)
    monkeypatch.setattr("web.replica.HEALTH", health)
    return health


def test_a_lost_replica_is_logged_once_and_each_fallback_counted(health, caplog):
    caplog.set_level(logging.WARNING, logger="flakeboard.replica")
    connection, clock, before = health.connection(), health.clock, fallbacks()
    assert health.usable()
    connection.up = False
    assert not health.usable()
    assert [r.getMessage() for r in caplog.records] == [
        'The read replica cannot be reached (connection to server at "10.0.0.9", port 5432 '
        "failed): pages read the primary."]
    # Within the retry window no connection is tried; each request still counts.
    clock.now += RETRY_SECONDS / 2
    assert not health.usable() and not health.usable()
    assert (connection.connects, connection.closed) == (2, 1)
    assert fallbacks() - before == 3
    assert len(caplog.records) == 1
    # Tried again after it, still down; a minute on, one line with the count since.
    clock.now += RETRY_SECONDS
    assert not health.usable()
    assert connection.connects == 3 and len(caplog.records) == 1
    clock.now += LOG_EVERY_SECONDS
    assert not health.usable()
    assert caplog.records[-1].getMessage() == (
        "The read replica is still unreachable: 4 more requests read the primary.")
    # Back: one line, and reads go to it again.
    clock.now += RETRY_SECONDS
    connection.up = True
    assert health.usable() and health.usable()
    assert caplog.records[-1].getMessage() == "The read replica answers again: pages read it."
    assert len(caplog.records) == 3 and fallbacks() - before == 5


def router_reads(route: str) -> str:
    token = ROUTE.set(route)
    try:
        return ReadReplicaRouter().db_for_read(None)
    finally:
        ROUTE.reset(token)


def test_the_router_reads_the_replica_only_where_the_request_may(health, monkeypatch):
    router = ReadReplicaRouter()
    assert router_reads(REPLICA) == REPLICA
    assert router_reads(PRIMARY) == PRIMARY
    with monkeypatch.context() as inside:  # what a transaction wrote is only on the primary
        inside.setattr(connections[PRIMARY], "in_atomic_block", True)
        assert router_reads(REPLICA) == PRIMARY
    assert router_reads(REPLICA) == REPLICA
    health.connection().up = False
    assert router_reads(REPLICA) == PRIMARY
    assert router.db_for_write(None) == PRIMARY
    assert router.allow_migrate(PRIMARY, "ledger") and not router.allow_migrate(REPLICA, "ledger")


def test_a_request_that_fell_back_reads_the_primary_to_its_end(health):
    token, before = ROUTE.set(REPLICA), fallbacks()
    try:
        health.connection().up = False
        assert ReadReplicaRouter().db_for_read(None) == PRIMARY
        health.connection().up = True
        assert ReadReplicaRouter().db_for_read(None) == PRIMARY
        assert health.connection().connects == 1
        assert fallbacks() - before == 1  # counted once a request, not once a query
    finally:
        ROUTE.reset(token)


def test_a_replica_that_names_the_primarys_database_is_read_through_the_primary():
    """As the test runner makes the replica a mirror of the primary: the tests' reads then
    see the rows of the test's own transaction, whichever the request's route."""
    primary = {"HOST": "127.0.0.1", "PORT": 5432, "NAME": "test_flakeboard", "USER": "a"}
    assert same_database({**primary, "USER": "b", "CONN_HEALTH_CHECKS": True}, primary)
    assert not same_database({**primary, "HOST": "replica.internal"}, primary)
    assert not same_database({**primary, "PORT": 5433}, primary)
    assert not same_database({**primary, "NAME": "flakeboard"}, primary)
    assert not same_database(None, primary)
