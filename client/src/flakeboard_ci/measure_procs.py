"""measure's pytest processes as its pool sees them (measure_pool.py): how each is started,
a process a zygote forked, and what the pool knows of each."""

from __future__ import annotations

import collections
import contextlib
import json
import os
import signal
import time

WORKER_KEY_ENV = "FLAKEBOARD_WORKER_KEY"
# Set for a process that is to collect and run nothing, then fork a child per block of runs.
ZYGOTE_ENV = "FLAKEBOARD_ZYGOTE"
# Set for a zygote that is to collect nothing either, but fork a child per set of files, which
# collects them (a zygote of one target's file, or a check's process).
BASE_ENV = "FLAKEBOARD_BASE"
# A whole session's process: what a bare pytest collects, in the collection's order.
SESSION = ["-p", "no:randomly"]
# Every process's runs are seeded from their PATCH_SEED (seeding.py): pytest-randomly would
# seed each with one seed of its own, and a test that flips on its random input would look
# stable; it is set aside, as its shuffling is (each process runs what it is sent).
OWN_SEEDS = SESSION
def plugin_pytest(python, arguments, environ, plugin=None):
    """The command and environment of a pytest of ``python`` that loads this file as its
    plugin (-p flakeboard_ci, found through PYTHONPATH), or the compiled ``plugin``, with
    the given arguments."""
    plugin_dir, plugin_file = os.path.split(plugin or os.path.abspath(__file__))
    pythonpath = [p for p in (environ.get("PYTHONPATH"), plugin_dir) if p]
    env = dict(environ, PYTHONPATH=os.pathsep.join(pythonpath))
    return [python, "-m", "pytest", "-p", os.path.splitext(plugin_file)[0], *arguments], env


class ForkedProc:
    """A process a zygote forked, as the pool sees it: its parent reports its exit code; the
    pool stops it by its process id, which it says in its hello."""

    def __init__(self, zygote):
        self.zygote, self.pid, self.returncode = zygote, None, None

    def poll(self):
        if self.returncode is None and self.zygote.proc.poll() is not None and not self._alive():
            self.returncode = -1  # its parent is gone and cannot report it
        return self.returncode

    def _alive(self):
        if self.pid is None:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True

    def kill(self):
        if self.pid is not None and self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    def wait(self):
        if self.returncode is None:
            self.returncode = -signal.SIGKILL  # its parent reaps it
        return self.returncode


class Worker:
    """One pytest process of the pool, as the parent sees it."""

    def __init__(self, ident, proc, log, fixed, zygote=False, files=()):
        self.ident, self.proc, self.log = ident, proc, log
        self.files = files_key(files)  # what it collects
        self.fixed = fixed  # its whole list of tasks, or None: fed as it goes
        # A zygote collects and runs nothing; once its hello says it can fork, the pool forks
        # children of it (Pool.fork) and never feeds it.
        self.zygote = zygote
        self.session = False  # the session's zygote (Pool.start_session)
        self.conn = self.hello = None
        self.outstanding = collections.OrderedDict()  # tag -> Task, in the order it runs them
        self.since = time.monotonic()  # when its first outstanding task started, about
        self.ended = False
        self.ran = set()  # the nodes it has run: a node's first run in a process is marked

    def answered(self):
        """Whether it was told to end and answered every task it was sent."""
        return self.ended and not self.outstanding

    def send(self, message):
        self.conn.send_bytes(json.dumps(message).encode("utf-8"))

    def log_tail(self, lines=15):
        try:
            with open(self.log, encoding="utf-8", errors="replace") as handle:
                return "".join(handle.readlines()[-lines:]).rstrip()
        except OSError:
            return ""


def files_key(files):
    """A set of files as the pool knows its zygotes by: their paths, normalised, in order."""
    return tuple(os.path.normpath(file) for file in files)
