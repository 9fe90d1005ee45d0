"""Whether any token's or suite's row may have changed since this process last read it.

Every ledger GET checks its token, with the token's suite (whose ledger revision makes the
ETag). ``ledger.tokens`` keeps what it read, with the ``marker`` taken just before reading;
while the marker is the same, nothing can have changed, and the read is skipped.

- SQLite: ``PRAGMA data_version`` moves when another connection commits, and the
  connection's own ``total_changes`` when it writes. Exact, for microseconds.
- PostgreSQL: triggers on the two tables (ledger's first migration) send a notification on
  the channel ``flakeboard_rows`` when a statement changes them; each process listens on
  a connection of its own and counts what arrived, polled without waiting. A change made by
  another process is seen when its notification arrives, within milliseconds of its
  commit; one made by this process, at once (its statements are watched). ``LISTEN_URL``
  says where to listen: the database itself by default, PostgreSQL directly behind
  PgBouncer in transaction mode, or ``off`` to read the rows on every request.

There is no marker (None: read the rows) inside a transaction, before the connection is
open, while the listening connection is down, and when the triggers are missing.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import select
import threading
from time import monotonic

from django.conf import settings

logger = logging.getLogger(__name__)

CHANNEL = "flakeboard_rows"
TABLES = ("ledger_suite", "ledger_apitoken")
TRIGGERS = ("flakeboard_suite_rows", "flakeboard_apitoken_rows")
RETRY_SECONDS = 5.0  # between attempts to open a listening connection that failed
_QUOTED = tuple(f'"{table}"' for table in TABLES)


class _Writes:
    """Statements of this process that change the two tables, counted (an execute wrapper
    that ``ledger.apps`` installs on each new PostgreSQL connection)."""

    count = 0

    def __call__(self, execute, sql, params, many, context):
        if sql.lstrip()[:6].upper() != "SELECT" and any(t in sql for t in _QUOTED):
            type(self).count += 1
        return execute(sql, params, many, context)


watch_writes = _Writes()


class _Listener:
    """This process's listening connection, opened at first use (after gunicorn's fork) and
    again after a failure; ``generation`` is (which connection, notifications received)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.pid = None
        self.conn = None
        self.opened = 0
        self.received = 0
        self.retry_at = 0.0
        self.inherited = []

    def generation(self, connection) -> tuple[int, int] | None:
        with self.lock:
            if self.pid != os.getpid():  # forked: the parent's connection is not ours
                # Kept, never closed or collected here: that would end the parent's session.
                self.inherited.append(self.conn)
                self.conn, self.pid, self.retry_at = None, os.getpid(), 0.0
            if self.conn is None and not self._open(connection):
                return None
            try:
                pgconn = self.conn.pgconn
                if select.select([pgconn.socket], [], [], 0)[0]:
                    pgconn.consume_input()
                    while pgconn.notifies() is not None:
                        self.received += 1
                if self.conn.broken or self.conn.closed:
                    raise ConnectionError("the listening connection closed")
            except Exception:
                logger.warning("listening for row changes failed; reading the rows on each "
                               "request until it reopens", exc_info=True)
                self._close()
                return None
            return self.opened, self.received

    def _open(self, connection) -> bool:
        if monotonic() < self.retry_at:
            return False
        self.retry_at = monotonic() + RETRY_SECONDS
        import psycopg

        try:
            url = settings.LISTEN_URL
            if url:
                conn = psycopg.connect(url, autocommit=True)
            else:
                params = connection.get_connection_params()
                for key in ("cursor_factory", "context", "prepare_threshold",
                            "server_side_binding"):  # Django's, not the driver's
                    params.pop(key, None)
                conn = psycopg.connect(**params, autocommit=True)
            found = conn.execute("SELECT count(*) FROM pg_trigger WHERE tgname = ANY(%s)",
                                 [list(TRIGGERS)]).fetchone()[0]
            if found != len(TRIGGERS):
                conn.close()
                logger.warning("the row-change triggers are missing (migrate the ledger): "
                               "reading the rows on each request")
                return False
            conn.execute(f"LISTEN {CHANNEL}")
        except Exception:
            logger.warning("could not listen for row changes; reading the rows on each "
                           "request", exc_info=True)
            return False
        self.conn, self.opened, self.received = conn, self.opened + 1, 0
        return True

    def close(self) -> None:
        with self.lock:
            self._close()

    def _close(self) -> None:
        if self.conn is not None and self.pid != os.getpid():
            self.inherited.append(self.conn)
        elif self.conn is not None:
            with contextlib.suppress(Exception):  # closing a broken connection may fail
                self.conn.close()
        self.conn = None


_listener = _Listener()
_serials = itertools.count(1)


def stop_listening() -> None:
    """Close this process's listening connection (before its database is dropped, say);
    the next marker opens it again."""
    _listener.close()
    _listener.retry_at = 0.0


def watch(sender, connection, **kwargs) -> None:
    """On each new PostgreSQL connection (``connection_created``), count its writes."""
    if connection.vendor == "postgresql" and watch_writes not in connection.execute_wrappers:
        connection.execute_wrappers.insert(0, watch_writes)


def marker(connection):
    """What must be the same at two reads for the rows between them to be unchanged, or
    None when that cannot be told (then the caller reads the rows)."""
    if connection.in_atomic_block or connection.connection is None:
        return None
    if connection.vendor == "sqlite":
        raw = connection.connection
        if getattr(connection, "_changes_raw", None) is not raw:  # a new connection
            connection._changes_raw, connection._changes_serial = raw, next(_serials)
        version = raw.execute("PRAGMA data_version").fetchone()[0]
        return connection._changes_serial, version, raw.total_changes
    if connection.vendor == "postgresql" and settings.LISTEN_URL != "off":
        generation = _listener.generation(connection)
        if generation is not None:
            return generation, watch_writes.count
    return None
