"""measure's worker processes: the pool of pytest processes, started fresh or forked from a
collected parent (measure_sources.py: what they run). Each process loads the file the pool
runs from as its plugin: the assembled flakeboard_ci.py, never this module."""

from __future__ import annotations

import itertools
import json
import multiprocessing.connection
import os
import queue
import re
import subprocess
import threading
import time

from .core import UsageError
from .measure_procs import (
    BASE_ENV,
    OWN_SEEDS,
    SESSION,
    WORKER_KEY_ENV,
    ZYGOTE_ENV,
    ForkedProc,
    Worker,
    files_key,
    plugin_pytest,
)
from .measure_runs import SCRIPT_SEED_BASE, Outcome
from .measure_workspace import compiled_plugin

CHUNK = 16  # runs sent to a worker at a time, at least: few enough to stop early, enough to stream
# A worker is kept fed with FILL seconds of runs at least, by the runs' recent mean time (at
# most MOST runs): fast runs would otherwise use up what it holds between two reads.
FILL = 0.02
MOST = 500
# A worker with more runs than this queued is not waited on, but read every POLL seconds:
# each answer it sends then goes into its socket's buffer, without waking this process and
# taking the worker's core from it, run after run. One that is about to run dry is waited on.
QUEUED = 4
POLL = 0.005
NO_PYTEST = re.compile(r"No module named '?pytest'?$", re.M)


class MeasureError(UsageError):
    """Measuring cannot go on: the workers cannot start (exit 64)."""


class Pool:
    """Worker processes, each a pytest that loads this file as a plugin, collects its files
    once and runs what it is sent; a process is stopped when a run outlasts the timeout."""

    def __init__(self, *, python, folder, slots, timeout, progress, plugin=None):
        self.python, self.folder, self.slots = python, folder, slots
        self.timeout, self.progress = timeout, progress
        self.key = os.urandom(16)
        self.plugin = compiled_plugin(folder) if plugin is None else plugin.path()
        # A Unix socket (a named pipe on Windows): a TCP one would hold small answers back.
        self.listener = multiprocessing.connection.Listener(authkey=self.key)
        self.accepted = queue.Queue()
        # The accepting thread wakes the loop's wait when a worker connects.
        self.woken, self.waker = multiprocessing.Pipe(duplex=False)
        self.closing = False
        threading.Thread(target=self._accept, args=(self.listener,), daemon=True).start()
        self.workers, self.spawned = {}, itertools.count()
        self.run_seconds = None  # a run's recent mean time, as the workers answer
        self.said_xdist = self.said_unforked = False
        # The base that said it forks, and its children that collected a target's file and
        # fork each block of its runs (by their files; None: that file's blocks start fresh).
        self.base = None
        self.base_started = False  # a base was started: the blocks wait for its hello
        self.zygotes = {}
        # One that collects the whole session (SESSION) for the checks in CI's order, started
        # with the first so that its collection overlaps the runs; None once it cannot fork.
        self.session_zygote = None

    def _accept(self, listener):
        while True:
            try:
                conn = listener.accept()
            except (OSError, EOFError, AttributeError, multiprocessing.AuthenticationError):
                # Closed under it: before its first accept, or between Listener.accept's
                # check and its use (an AttributeError). Otherwise a stray connection.
                if self.closing:
                    return
                continue
            self.accepted.put(conn)
            try:
                self.waker.send_bytes(b"")
            except OSError:
                return  # the pool was closed

    def close(self):
        if self.closing:
            return
        for worker in list(self.workers.values()):
            self._stop(worker)
        self.closing = True
        self.listener.close()
        self.waker.close()
        self.woken.close()

    def spawn(self, files, fixed=None, seed=SCRIPT_SEED_BASE, zygote=False, base=False):
        """Start a pytest process that collects ``files``; with ``zygote``, one that runs
        nothing and forks a child per ``fork``, where it can (else it is fed as any); with
        ``base`` too, one that collects nothing and forks a child per set of files (else it
        is a zygote of ``files``)."""
        ident = next(self.spawned)
        command, env = plugin_pytest(self.python, [
            f"--flakeboard-worker={ident}:{self.listener.address}",
            f"--basetemp={os.path.join(self.folder, f'tmp{ident}')}",
            "-q", "--tb=no", "-p", "no:cacheprovider", *OWN_SEEDS, *files],
            dict(os.environ, PYTHONHASHSEED="0", PATCH_SEED=str(seed)), self.plugin)
        env[WORKER_KEY_ENV] = self.key.hex()
        if zygote:
            env[ZYGOTE_ENV] = "1"
        if base:
            env[BASE_ENV] = "1"
            self.base_started = True
        log = os.path.join(self.folder, f"worker{ident}.log")
        with open(log, "wb") as out:
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, env=env)
        worker = self.workers[ident] = Worker(ident, proc, log, fixed, zygote, files)
        return worker

    def fork(self, fixed, zygote):
        """A child of ``zygote``: it starts from its collected state, untouched, connects as
        a worker of its own and is fed as one (``fixed``: its tasks)."""
        ident = next(self.spawned)
        worker = self.workers[ident] = Worker(ident, ForkedProc(zygote), zygote.log, fixed)
        zygote.send({"fork": ident})
        return worker

    def collect(self, files, fixed=None, zygote=False):
        """A child of the base that collects ``files`` as a fresh pytest would (its plugins
        and conftests loaded once, by the base): a zygote of them, or a worker for ``fixed``
        tasks."""
        ident = next(self.spawned)
        worker = Worker(ident, ForkedProc(self.base), self.base.log, fixed, zygote, files)
        self.workers[ident] = worker
        self.base.send({"fork": ident, "files": list(files), "zygote": zygote})
        if zygote:
            self.zygotes[files_key(files)] = worker
        return worker

    def zygote_of(self, files):
        """The zygote that collected exactly ``files`` and forks, or None."""
        zygote = self.zygotes.get(files_key(files))
        return zygote if zygote is not None and zygote.hello is not None else None

    def start_session(self):
        """Start the session's zygote, which collects what a bare pytest collects and runs
        nothing until a check in CI's order is forked from it."""
        worker = self.spawn(SESSION, zygote=True)
        worker.session = True
        self.session_zygote = worker

    def session(self, seed, fixed=None):
        """A process that collected the whole session: a child of the session's zygote once
        it said it forks, else a fresh one started with PATCH_SEED ``seed``."""
        zygote = self.session_zygote
        if zygote is not None and zygote.hello is not None:
            return self.fork(fixed, zygote)
        return self.spawn(SESSION, fixed=fixed, seed=seed)

    def start(self, files, fixed, seed):
        """A process for ``fixed`` tasks that collects ``files``: a child of the zygote that
        collected just them, else a child of the base that collects them, else a fresh one
        started with PATCH_SEED ``seed``."""
        if files == SESSION:
            return self.session(seed, fixed)
        zygote = self.zygote_of(files)
        if zygote is not None:
            return self.fork(fixed, zygote)
        if self.base is not None:
            return self.collect(files, fixed)
        return self.spawn(files, fixed=fixed, seed=seed)

    def run(self, source):
        """Run what ``source`` starts and feeds until no process is left."""
        while True:
            # A process that answered all it was sent is only exiting: its slot is free. A
            # zygote waits, and takes none.
            while source.spawn(self, sum(not w.answered() and not w.zygote
                                         for w in self.workers.values())):
                pass
            if all(w.zygote and w.hello for w in self.workers.values()):
                return  # nothing left but the zygotes: they wait for the next run
            self._receive(source)
            for worker in list(self.workers.values()):
                self._check(worker, source)
            for worker in list(self.workers.values()):
                if (worker.hello and not worker.ended and not worker.zygote
                        and worker.conn is not None):
                    self._feed(worker, source)
            self.progress.tick()

    def _receive(self, source):
        greeted = False
        while not self.accepted.empty():
            conn = self.accepted.get()
            # The hello comes first; a worker is known by the ident it was started with.
            hello = json.loads(conn.recv_bytes())
            worker = self.workers.get(hello["hello"])
            if worker is None:
                conn.close()
                continue
            worker.conn, worker.hello, worker.since = conn, hello, time.monotonic()
            if isinstance(worker.proc, ForkedProc):
                worker.proc.pid = hello.get("pid")
                # What its zygote collected, in its order, is a block's child's too.
                hello.setdefault("items", worker.proc.zygote.hello.get("items", []))
            if worker.session:
                self._session_hello(worker, hello)
                continue
            if hello.get("base"):
                self.base = worker
            elif worker.zygote and not hello.get("fork"):
                self._unforked(worker, hello)
            if hello.get("xdist") and not self.said_xdist:
                self.said_xdist = True
                self.progress.note(f"flakeboard: the project's pytest-xdist (-n {hello['xdist']})"
                                   " is set aside: each of measure's workers is one pytest"
                                   " process")
            source.hello(worker, hello)
            greeted = True
        conns = {w.conn: w for w in self.workers.values() if w.conn is not None}
        waited = [conn for conn, worker in conns.items() if not busy(worker)]
        # A worker that said hello waits for its tasks: feed it before waiting on anything.
        timeout = 0 if greeted else POLL if len(waited) < len(conns) else 0.05
        ready = multiprocessing.connection.wait([self.woken, *waited], timeout=timeout)
        if self.woken in ready:
            while self.woken.poll():
                self.woken.recv_bytes()
        for conn, worker in conns.items():
            if conn in ready or (conn not in waited and worker.conn is not None):
                self._read(worker, source)

    def _unforked(self, worker, hello):
        """A zygote that cannot fork (threads running after its collection): a base's child
        is stopped, and its file's blocks each start a fresh process; the collecting process
        itself is fed as any process. Said once."""
        if isinstance(worker.proc, ForkedProc):
            self._stop(worker)
            worker.ended = True
            self.zygotes[files_key(worker.files)] = None
        worker.zygote = False
        if not self.said_unforked:
            self.said_unforked = True
            self.progress.note(f"flakeboard: each block of runs starts a fresh pytest "
                               f"process: {hello.get('unforked') or 'fork is unsafe'}")

    def _session_hello(self, worker, hello):
        """The session's zygote collected: it waits to be forked, or where it cannot fork,
        it is stopped and each check in CI's order starts a fresh process, as without it."""
        if not hello.get("fork"):
            self._stop(worker)
            self.workers.pop(worker.ident, None)
            self.session_zygote = None

    def _read(self, worker, source):
        try:
            while worker.conn.poll():
                self._message(worker, json.loads(worker.conn.recv_bytes()), source)
        except (EOFError, OSError):
            worker.conn.close()
            worker.conn = None

    def _message(self, worker, message, source):
        if "exited" in message:  # a zygote's child
            child = self.workers.get(message["exited"])
            if child is not None and isinstance(child.proc, ForkedProc):
                child.proc.returncode = message["code"]
            return
        if "dropped" in message:
            for tag in message["dropped"]:
                worker.outstanding.pop(tag, None)
            return
        task = worker.outstanding.pop(message["tag"])
        worker.since = time.monotonic()
        seconds, mean = message["seconds"], self.run_seconds
        self.run_seconds = seconds if mean is None else mean + (seconds - mean) / 8
        first = task.node not in worker.ran
        worker.ran.add(task.node)
        outcome = Outcome(message["failed"], message["seconds"], message["detail"], first)
        if source.result(task, outcome):
            self._drop(task.node)

    def _drop(self, node):
        """Tell the fed workers to skip their queued runs of a finished node."""
        for worker in self.workers.values():
            queued = any(task.node == node for task in worker.outstanding.values())
            if queued and worker.fixed is None and worker.conn is not None:
                worker.send({"drop": node})

    def _check(self, worker, source):
        """Handle a worker that exited or outlasted the timeout."""
        code = worker.proc.poll()
        if worker.session and code is not None:
            # The session's zygote ended (its collection failed): the checks in CI's order
            # start fresh processes, which say why.
            self.workers.pop(worker.ident, None)
            self.session_zygote = None
            return
        if code is None and self._late(worker) and worker.conn is not None:
            self._read(worker, source)  # what it answered since it was last read
        late = self._late(worker)
        if code is None and not late:
            return
        if code is None:
            self._stop(worker)
        elif worker.conn is not None:
            self._read(worker, source)  # what it said before it exited
        if worker.hello is None and not worker.fixed:
            # Nothing of its own to fail: pytest itself could not start here.
            why = self._startup_failure(worker, code)
            if not source.unheard(worker, why):
                raise MeasureError(why)
        if worker.hello is None and worker.fixed:  # a fed one that never said hello has none
            worker.outstanding.update((task.tag, task) for task in worker.fixed)
        self._lose(worker, source, code, late)
        self.workers.pop(worker.ident, None)
        if self.base is worker:
            self.base = None
        if worker.zygote and self.zygotes.get(files_key(worker.files)) is worker:
            self.zygotes[files_key(worker.files)] = None
        if worker.conn is not None:
            worker.conn.close()
        source.ended(worker, code)

    def _late(self, worker):
        # The clock runs from the hello: collecting is not part of a run.
        return (bool(worker.outstanding) and self.timeout is not None
                and time.monotonic() - worker.since > self.timeout)

    def _lose(self, worker, source, code, late):
        """The worker is gone: its running task failed (timed out, or crashed the process);
        the rest are handed back, or failed when the process was their only one."""
        tasks = list(worker.outstanding.values())
        worker.outstanding.clear()
        for position, task in enumerate(tasks):
            if position == 0 or worker.fixed is not None:
                if late and position == 0:
                    detail = f"timed out after {self.timeout:g}s and was stopped"
                    self.progress.timed_out(task, self.timeout)
                else:
                    detail = f"its pytest process ended (exit code {code}) before it finished"
                first = task.node not in worker.ran
                worker.ran.add(task.node)
                if source.result(task, Outcome(True, 0.0, detail, first)):
                    self._drop(task.node)
            else:
                source.lost(task)

    def _startup_failure(self, worker, code):
        tail = worker.log_tail()
        if NO_PYTEST.search(tail):
            return (f"there is no pytest in {self.python}: measure runs the tests with the "
                    f"interpreter that runs it; install pytest there, or run flakeboard_ci.py "
                    f"with the project's own Python")
        return f"the pytest worker could not start (exit code {code}):\n{tail}"

    def _stop(self, worker):
        if worker.proc.poll() is None:
            worker.proc.kill()
        worker.proc.wait()

    def _feed(self, worker, source):
        if worker.fixed is not None:
            self._send(worker, worker.fixed)
            worker.send({"end": True})
            worker.ended = True
            return
        chunk = self.chunk()
        if len(worker.outstanding) < chunk:
            tasks = source.feed(worker, chunk)
            if tasks:
                self._send(worker, tasks)
            elif not source.waiting(worker):
                # Nothing more is to come: it runs its last queued run without asking.
                worker.send({"end": True})
                worker.ended = True

    def chunk(self):
        """How many runs a fed worker is kept with: CHUNK, or FILL seconds of runs by the
        recent mean of a run's time, up to MOST."""
        if self.run_seconds is None:
            return CHUNK
        if self.run_seconds * MOST <= FILL:
            return MOST
        return max(CHUNK, int(FILL / self.run_seconds))

    def _send(self, worker, tasks):
        if not worker.outstanding:
            worker.since = time.monotonic()
        for task in tasks:
            worker.outstanding[task.tag] = task
        worker.send({"tasks": [[task.tag, task.node, task.seed] for task in tasks]})


def busy(worker):
    """Whether a fed worker has runs enough queued to be read by polling, not waited on."""
    return (worker.hello is not None and not worker.zygote
            and len(worker.outstanding) > QUEUED)
