"""measure's workers from the inside: the served file is also the pytest plugin each worker
process loads (-p flakeboard_ci, plugin.py), which runs the tests it is sent on fresh copies
of the collected items; a zygote runs none, and forks a child per block of runs instead."""

from __future__ import annotations

import collections
import contextlib
import copy
import json
import multiprocessing.connection
import os
import pathlib
import select
import sys
import threading
import traceback

from .measure_batch import RunsInARow, failure_line, own_protocol_reason
from .measure_procs import BASE_ENV, WORKER_KEY_ENV, ZYGOTE_ENV
from .seeding import tryfirst

REAP_EVERY = 0.02  # seconds: how often a zygote looks for its children's exits


def fresh_item(template):
    """A copy of a collected item, to run once more as pytest runs a new item: its own
    request, so function-scoped fixtures are made anew (a new tmp_path each time), its own
    report sections, and for a method a new instance of its class. Its parents are shared,
    and with them the fixtures of wider scope."""
    known(template)
    item = copy.copy(template)
    item._report_sections = []
    item.user_properties = []
    if getattr(template, "instance", None) is not None:
        for cached in ("_obj", "_instance"):
            item.__dict__.pop(cached, None)
    if hasattr(item, "_initrequest"):
        item._initrequest()
    return item


def known(template):
    """Work out once what every copy of the item would work out again: its location (for
    a test function, from its source), which its copies then share."""
    template.location  # noqa: B018 (a cached property: worked out here, once)
    return template


class MeasureWorker:
    """The pytest side of a worker: says hello with what it collected, then runs each task
    it is sent (a node and its PATCH_SEED) on a fresh copy of the item, and answers."""

    def __init__(self, address, xdist=None):
        ident, self.address = address.split(":", 1)
        self.xdist = xdist  # the -n of the project's pytest-xdist, set aside
        self.ident = int(ident)
        self.key = bytes.fromhex(os.environ.pop(WORKER_KEY_ENV, ""))
        self.zygote = os.environ.pop(ZYGOTE_ENV, "") == "1"
        # A base loads pytest, its plugins and the conftests once and collects nothing: each
        # set of files is collected by a child it forks, as a fresh process would collect it.
        self.base = os.environ.pop(BASE_ENV, "") == "1"
        self.based = False  # the base, once its children are all gone: it runs nothing
        self.errors, self.reports = [], []
        self.queue, self.ended, self.promised = collections.deque(), False, None
        self.shared = {}  # node id -> whether its runs in a row share pytest's protocol

    def pytest_collectreport(self, report):
        if report.failed:
            self.errors.append([report.nodeid, failure_line(report)])

    def pytest_runtest_logreport(self, report):
        self.reports.append(report)

    @tryfirst
    def pytest_collection(self, session):
        """The base's: say it forks, then fork a child per set of files it is asked for,
        which goes on from here to collect them (config.args) as a zygote of them or as a
        worker fed its tasks. Where it cannot fork, it collects its own files as a zygote
        does, and says so in its hello."""
        if not self.base or unforkable():
            return None
        self.base = False
        conn = multiprocessing.connection.Client(self.address, authkey=self.key)
        try:
            self._send(conn, {"hello": self.ident, "base": True, "fork": True})
            forked = self._fork_loop(conn, session, {})
        except EOFError:
            forked = None
        if forked is None:  # the base itself, all its children gone: it collected nothing
            conn.close()
            self.based = True
            return True
        self.ident, files, self.zygote = forked
        own_basetemp(session.config, self.ident)
        own_capture(session.config)
        session.config.args = list(files)
        return None

    def pytest_runtestloop(self, session):
        if self.based:
            return True
        config = session.config
        templates = collections.OrderedDict()
        for item in session.items:
            templates.setdefault(item.nodeid, item)
        hello = {"hello": self.ident, "items": list(templates), "pid": os.getpid(),
                 "rootdir": str(getattr(config, "rootpath", None) or config.rootdir),
                 "errors": self.errors, "xdist": self.xdist}
        unforked = self.zygote and unforkable()
        if self.zygote:
            hello.update(fork=not unforked, unforked=unforked)
        conn = multiprocessing.connection.Client(self.address, authkey=self.key)
        try:
            self._send(conn, hello)
            if self.zygote and not unforked:
                for template in templates.values():  # once here, not in every child
                    known(template)
                self._fork_loop(conn, session, templates)
            else:
                self._serve(conn, templates)
        except EOFError:
            pass  # measure has gone: pytest's session end tears down what is set up
        finally:
            conn.close()
        return True

    def _serve(self, conn, templates):
        """Run the tasks it is sent until told to end."""
        while True:
                self._receive(conn, block=not self.queue and not self.ended)
                if not self.queue:
                    if self.ended:
                        break
                    continue
                tag, node, seed = self.queue.popleft()
                # The next item decides what the teardown keeps: wait until it is known.
                while not self.queue and not self.ended:
                    self._receive(conn, block=True)
                self.promised = self.queue[0][0] if self.queue else None
                template = templates.get(node)
                if self._in_a_row(template, node):
                    self._run_in_a_row(conn, template, (tag, node, seed))
                    continue
                nextitem = templates.get(self.queue[0][1]) if self.queue else None
                answer = self._run(template, seed, nextitem)
                self._send(conn, dict(answer, tag=tag))

    def _in_a_row(self, template, node):
        """Whether the node's run can begin runs in a row: the next is its own too, and
        its runs can share a pass of pytest's protocol."""
        if template is None or not self.queue or self.queue[0][1] != node:
            return False
        if node not in self.shared:
            self.shared[node] = not own_protocol_reason(template)
        return self.shared[node]

    def _run_in_a_row(self, conn, template, first):
        """Run ``first`` and the node's next queued runs under one pass of pytest's
        protocol, up to the last queued one: it is left to follow them, as the protocol's
        next item."""
        node = first[1]
        said = readable(conn)

        def follow():
            if said():
                self._receive(conn, block=False)
            if len(self.queue) > 1 and self.queue[0][1] == node == self.queue[1][1]:
                task = self.queue.popleft()
                self.promised = self.queue[0][0]
                return task
            return None

        item = fresh_item(template)
        runs = RunsInARow(item, first, follow, lambda answer: self._send(conn, answer))
        item.runtest = runs.runtest
        self.reports = []
        item.config.hook.pytest_runtest_protocol(item=item, nextitem=template)
        runs.finish(self.reports)

    def _fork_loop(self, conn, session, templates):
        """The zygote's, and the base's: fork a child per ``fork`` it is sent, say when each
        exits, and end when told to once they all have. It runs no test: each child starts
        from the same collected state. A base's child returns (its ident, the files it is
        to collect, whether as a zygote); the base and a zygote return None."""
        children = {}  # process id -> the child's ident
        # Where it can, it waits on each child's process descriptor too, which is readable
        # once the child has exited: its exit is said at once, not at the next look.
        exits = {}  # process id -> its descriptor
        while not (self.ended and not children):
            timeout = None if len(exits) == len(children) else REAP_EVERY
            if conn in multiprocessing.connection.wait([conn, *exits.values()], timeout):
                message = json.loads(conn.recv_bytes())
                if "fork" in message:
                    flush()  # else what it holds is written twice
                    pid = os.fork()
                    if pid == 0:
                        for descriptor in exits.values():
                            os.close(descriptor)
                        if "files" in message:  # a base's child: it collects them
                            conn.close()
                            return message["fork"], message["files"], message["zygote"]
                        self._child(conn, session, templates, message["fork"])
                    children[pid] = message["fork"]
                    descriptor = exit_descriptor(pid)
                    if descriptor is not None:
                        exits[pid] = descriptor
                elif "end" in message:
                    self.ended = True
            for pid in list(children):
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    if pid in exits:
                        os.close(exits.pop(pid))
                    self._send(conn, {"exited": children.pop(pid),
                                      "code": exit_code(status)})

    def _child(self, zygote_conn, session, templates, ident):
        """A forked child: a worker of its own (its ident, its connection, its basetemp)
        that runs what it is sent as a fresh process does, then exits at once, so that
        nothing of the zygote's state is torn down."""
        code = 0
        try:
            zygote_conn.close()
            self.ident, self.zygote = ident, False
            own_basetemp(session.config, ident)
            own_capture(session.config)
            conn = multiprocessing.connection.Client(self.address, authkey=self.key)
            self._send(conn, {"hello": ident, "pid": os.getpid()})
            with contextlib.suppress(EOFError):
                self._serve(conn, templates)
        except BaseException as exc:  # the child ends here whatever happened
            returncode = getattr(exc, "returncode", None)
            code = returncode if isinstance(returncode, int) else (
                2 if isinstance(exc, KeyboardInterrupt) else 1)
            if returncode is None and not isinstance(exc, KeyboardInterrupt):
                traceback.print_exc()
        finally:
            flush()
            os._exit(code)

    def _run(self, template, seed, nextitem):
        if template is None:
            return {"failed": True, "seconds": 0.0, "detail": "not collected in this process"}
        item = fresh_item(template)
        os.environ["PATCH_SEED"] = str(seed)
        self.reports = []
        item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        failed = [report for report in self.reports if report.failed]
        return {"failed": bool(failed), "seconds": sum(r.duration for r in self.reports),
                "detail": failure_line(failed[0]) if failed else ""}

    def _receive(self, conn, block):
        while block or conn.poll():
            block = False
            message = json.loads(conn.recv_bytes())
            if "tasks" in message:
                self.queue.extend(tuple(task) for task in message["tasks"])
            elif "drop" in message:
                # The promised next item stays: the last teardown was made for it.
                dropped = [task[0] for task in self.queue
                           if task[1] == message["drop"] and task[0] != self.promised]
                self.queue = collections.deque(t for t in self.queue if t[0] not in dropped)
                self._send(conn, {"dropped": dropped})
            elif "end" in message:
                self.ended = True

    @staticmethod
    def _send(conn, message):
        conn.send_bytes(json.dumps(message).encode("utf-8"))


def unforkable():
    """Why this process cannot fork a child per block of runs, or "": no fork here, or
    threads running after the collection (a child would hold a copy of their locks, but not
    the threads)."""
    if not hasattr(os, "fork"):
        return "os.fork is unavailable here"
    if threading.active_count() > 1:
        return (f"the collection left {threading.active_count() - 1} thread(s) running, and "
                f"forking a process with threads is unsafe")
    return ""


def readable(conn):
    """A function that tells whether ``conn`` has something to read: a poll object where
    there is one, which costs less, run after run, than conn.poll()."""
    if not hasattr(select, "poll"):
        return conn.poll
    poller = select.poll()
    poller.register(conn.fileno(), select.POLLIN)
    return lambda: bool(poller.poll(0))


def exit_descriptor(pid):
    """A descriptor that is readable once the process has exited (os.pidfd_open: Linux
    5.3 and Python 3.9 on), or None: then its exit is looked for every REAP_EVERY."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def own_basetemp(config, ident):
    """A forked child's own --basetemp, beside the zygote's, as a fresh process has."""
    factory = getattr(config, "_tmp_path_factory", None)
    given = getattr(factory, "_given_basetemp", None)
    if given is not None:
        factory._given_basetemp = pathlib.Path(os.path.dirname(str(given)), f"tmp{ident}")
        factory._basetemp = None


def own_capture(config):
    """A forked child's own capture of its output, as a fresh process has: not the file it
    shares with the zygote and its siblings."""
    capman = config.pluginmanager.getplugin("capturemanager")
    capturing = getattr(capman, "_global_capturing", None)
    if capturing is None:
        return
    suspended = getattr(capturing, "_state", None) == "suspended"
    capturing.stop_capturing()
    capman._global_capturing = None
    capman.start_global_capturing()
    if suspended:
        capman.suspend_global_capture()


def flush():
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


def exit_code(status):
    """A wait status as Popen.returncode says it (os.waitstatus_to_exitcode, Python 3.9+)."""
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
