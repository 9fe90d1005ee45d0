"""An xdist worker ends without tearing its interpreter down: conftest.py's
``pytest_collection`` calls ``end_at_once`` in each worker before it collects.

When a worker's session is over and its results are with the run's first process, that
process still waits for the worker's process to end, and Python's own ending of a worker
(freeing the modules and objects of some 1,700 tests) took over a second of the run's wall
time, every run. So the last thing a worker does at exit is end its process at once, with
status 0 (the run's first process reads a worker's outcome from what it sent, never from
its status): after every exit handler registered later (pytest's own, a test's), and after
flushing the logging handlers and the standard streams. A process that is not an xdist
worker ends as Python ends it, a pytest that a worker's test starts included (it inherits
the worker's PYTEST_XDIST_WORKER, but it has no ``workerinput``).
"""

from __future__ import annotations

import atexit
import logging
import os
import sys


def _exit_now() -> None:
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)


def end_at_once(session) -> None:
    """In an xdist worker, end its process at once when its exit handlers have run."""
    if hasattr(session.config, "workerinput"):
        atexit.register(_exit_now)
