"""The database router of a board with a read replica (``READ_DATABASE_URL``), and what it
does when the replica cannot be reached.

Writes always go to the primary, and so do reads outside a request the middleware sent to
the replica (``web.read_routing.ROUTE``), reads inside a transaction on the primary (what a
write has not committed yet is only there), and those of a replica that names the primary's
own database (the tests' mirror). ``migrate`` never runs on the replica.

A request's first read from the replica checks its connection (Django's health check of a
kept connection, or a new one). If that fails, the request reads the primary instead, and
so does every request of this process for the next ``RETRY_SECONDS``, without trying: a
replica that hangs costs one connect timeout per process, not one per page. Each request
so sent back counts in ``/metrics`` (``flakeboard_replica_fallbacks_total``); the log says
so in one line when the replica is lost, at most one a ``LOG_EVERY_SECONDS`` while it stays
lost (with the count since the last), and one when it answers again.
"""

from __future__ import annotations

import logging
import threading
from time import monotonic

from django.db import DatabaseError, connections

from web.metrics import REPLICA_FALLBACKS
from web.read_routing import PRIMARY, REPLICA, ROUTE

RETRY_SECONDS = 5.0
LOG_EVERY_SECONDS = 60.0

log = logging.getLogger("flakeboard.replica")


class ReplicaHealth:
    """Whether the replica can be read now, for this process: its down window, its
    log lines and its fallback count (shared by the process's threads)."""

    def __init__(self, connection=lambda: connections[REPLICA], clock=monotonic):
        self.connection = connection  # the replica's connection in the calling thread
        self.clock = clock
        self.lock = threading.Lock()
        self.down_until = 0.0  # no connection is tried before then
        self.down = False
        self.logged_at = 0.0
        self.unlogged = 0  # fallbacks since the last log line

    def usable(self) -> bool:
        """Whether the replica answers this thread; if not, the request's fallback is
        counted, and logged as the module says."""
        if self.clock() < self.down_until:
            self.fell_back(lost=False)
            return False
        connection = self.connection()
        try:
            connection.close_if_health_check_failed()
            connection.ensure_connection()
        except DatabaseError as error:
            connection.close()
            self.fell_back(lost=True, error=error)
            return False
        if self.down:
            with self.lock:
                back, self.down = self.down, False
            if back:
                log.warning("The read replica answers again: pages read it.")
        return True

    def fell_back(self, *, lost: bool, error: DatabaseError | None = None) -> None:
        REPLICA_FALLBACKS.inc()
        with self.lock:
            now = self.clock()
            if lost:
                self.down_until = now + RETRY_SECONDS
            first, self.down = not self.down, True
            if first:
                self.logged_at, self.unlogged = now, 0
                due = False
            else:
                self.unlogged += 1
                due = now - self.logged_at >= LOG_EVERY_SECONDS
                if due:
                    count, self.unlogged, self.logged_at = self.unlogged, 0, now
        if first:
            reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
            log.warning("The read replica cannot be reached (%s): pages read the primary.",
                        reason)
        elif due:
            log.warning("The read replica is still unreachable: %d more requests read the "
                        "primary.", count)


HEALTH = ReplicaHealth()


def same_database(replica: dict | None, primary: dict) -> bool:
    """Whether the replica's settings name the primary's own database: a test mirror
    (``"TEST": {"MIRROR": "default"}``, whose name the test runner sets to the primary's).
    Its reads then go through the primary's connection, which sees the test's rows."""
    return replica is not None and all(
        replica.get(key) == primary.get(key) for key in ("HOST", "PORT", "NAME")
    )


class ReadReplicaRouter:
    """Reads go where the request's route says, once the replica answers; writes and
    migrations to the primary only."""

    def db_for_read(self, model, **hints):
        if ROUTE.get() != REPLICA or connections[PRIMARY].in_atomic_block:
            return PRIMARY
        if same_database(connections.settings.get(REPLICA), connections.settings[PRIMARY]):
            return PRIMARY
        if HEALTH.usable():
            return REPLICA
        ROUTE.set(PRIMARY)  # the rest of this request reads the primary (reset after it)
        return PRIMARY

    def db_for_write(self, model, **hints):
        return PRIMARY

    def allow_relation(self, obj1, obj2, **hints):
        return True  # the replica holds the primary's rows

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return db == PRIMARY
