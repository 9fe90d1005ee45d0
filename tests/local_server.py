"""A test's server on 127.0.0.1 (a webhook receiver, an OIDC issuer, a board that breaks),
answering in a thread of its own while the test runs.

``socketserver``'s ``serve_forever`` looks for its stop request every ``poll_interval``,
half a second by default: each test that stopped a server so waited up to that long in its
teardown. Here it looks every 10 ms."""

from __future__ import annotations

import threading
from contextlib import contextmanager

POLL_INTERVAL = 0.01  # seconds between looks for shutdown()


@contextmanager
def serving(server):
    """The server answering in a thread of its own; shut down and closed after."""
    thread = threading.Thread(target=server.serve_forever, args=(POLL_INTERVAL,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
