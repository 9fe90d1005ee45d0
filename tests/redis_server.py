"""A Redis server for the tests of the shared cache (``CACHE_URL=redis://``): Debian's
``redis-server``, started on a free port of 127.0.0.1 with nothing saved to disk, and
stopped after the tests. Without it those tests are skipped, saying how to install it;
``.ci/run`` installs it, so CI always runs them."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.throwaway import free_port

REDIS_SERVER = shutil.which("redis-server")
SKIPPED = ("redis-server is not installed (apt-get install -y redis-server): the tests of "
           "the shared cache are skipped")
START_SECONDS = 10


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@contextmanager
def redis_server(folder: Path) -> Iterator[str]:
    """A running server's ``redis://`` URL; another port is tried when the first was
    taken between choosing it and the server's bind."""
    for _ in range(3):
        port = free_port()
        process = subprocess.Popen(
            [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(folder)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_SECONDS
        while process.poll() is None and not _answers(port):
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if process.poll() is None and _answers(port):
            break
        process.kill()
        process.wait()
    else:
        raise RuntimeError(f"redis-server did not start on 127.0.0.1 (last port {port})")
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)
