"""Test impact analysis: which source files each test executes (gate --record-impact), sent
to the board as the suite's impact map; and, on a pull request, the board's answer to
which tests execute the files the diff changed (the plan's fifth group, SPEC 2.4c).

The recorder runs inside gate's one pytest run. Per test (its setup, call and teardown) it
notes the file of every code object that starts: with ``sys.monitoring`` (Python 3.12+),
PY_START events whose callback answers DISABLE after a code object's first start, the
events restarted at each test's start, so a test costs one callback per code object it
runs; before 3.12, ``sys.settrace`` with a 'call' handler that notes the file and traces
no further. Only files under the root (git's, else the working folder) count, outside
site-packages, the interpreter's own folders and this file, and not the test files
(pytest's ``python_files``, conftest.py and each collected test's file)."""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys

from .board import quote

# The tool id asked of sys.monitoring first (the ids 3 and 4 are free by convention), then
# the others that are not the debugger's, coverage's or the profiler's.
MONITORING_TOOL_IDS = (4, 3, 5)
# How many changed paths one question to the board names.
IMPACT_CHUNK = 500


def git_root(folder="."):
    """The root of the git work tree holding ``folder``, which a diff's paths are relative
    to; ``folder`` itself outside git."""
    try:
        done = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=folder,
                              stdin=subprocess.DEVNULL, capture_output=True, check=False)
    except OSError:
        return os.path.abspath(folder)
    top = done.stdout.decode("utf-8", "replace").strip()
    return top if done.returncode == 0 and top else os.path.abspath(folder)


class ImpactRecorder:
    """The source files each test executes, as paths relative to ``root`` with forward
    slashes, written into ``owner.impact`` (node id -> sorted paths) as each test ends. When
    it cannot record (sys.settrace is another tool's: coverage, a debugger), it says why in
    ``owner.impact_blocked`` and records nothing, so that no partial map is sent."""

    def __init__(self, root, owner, config):
        self.root = os.path.realpath(root)
        self.owner = owner
        self.files = None  # the current test's files; None between tests
        self.known = {}  # a code object's file -> its path in the map, or None
        self.skip_names = [*(config.getini("python_files") or []), "conftest.py"]
        self.test_files = set()
        self.outside = [os.path.realpath(p) + os.sep for p in
                        {sys.prefix, sys.base_prefix, sys.exec_prefix} if p]
        self.this_file = os.path.realpath(__file__)
        self.tool = None  # sys.monitoring's tool id; None: sys.settrace
        monitoring = getattr(sys, "monitoring", None)
        if monitoring is not None:
            for tool in MONITORING_TOOL_IDS:
                if monitoring.get_tool(tool) is None:
                    monitoring.use_tool_id(tool, "flakeboard-impact")
                    monitoring.register_callback(tool, monitoring.events.PY_START,
                                                 self._started)
                    monitoring.set_events(tool, monitoring.events.PY_START)
                    self.tool = tool
                    break

    # sys.monitoring (3.12+): once per code object per test.
    def _started(self, code, offset):
        if self.files is not None:
            self.files.add(code.co_filename)
        return sys.monitoring.DISABLE

    # sys.settrace (before 3.12): each call's file, and no tracing inside it.
    def _traced(self, frame, event, arg):
        if event == "call":
            self.files.add(frame.f_code.co_filename)
        return None

    def pytest_collection_finish(self, session):
        files = (getattr(item, "path", None) or getattr(item, "fspath", None)
                 for item in session.items)
        self.test_files = {os.path.realpath(str(path)) for path in files if path}

    def pytest_runtest_logstart(self, nodeid, location):
        if self.owner.impact_blocked:
            return
        if self.tool is None and sys.gettrace() is not None:
            self.owner.impact_blocked = ("another tool (coverage, a debugger) holds "
                                         "sys.settrace")
            self.owner.impact.clear()
            return
        self.files = set()
        if self.tool is not None:
            sys.monitoring.restart_events()
        else:
            sys.settrace(self._traced)

    def pytest_runtest_logfinish(self, nodeid, location):
        if self.files is None:
            return
        if self.tool is None:
            sys.settrace(None)
        files, self.files = self.files, None
        paths = {self.in_map(name) for name in files}
        paths.discard(None)
        self.owner.impact[nodeid] = sorted(paths)

    def in_map(self, filename):
        """A code object's file as the map names it; None when it is not the project's
        source (outside the root, the interpreter's, a test file, not a file)."""
        if filename not in self.known:
            self.known[filename] = self._path(filename)
        return self.known[filename]

    def _path(self, filename):
        if not filename or filename.startswith("<"):
            return None
        real = os.path.realpath(filename)
        if real == self.this_file or real in self.test_files:
            return None
        if any(real.startswith(prefix) for prefix in self.outside):
            return None
        try:
            relative = os.path.relpath(real, self.root)
        except ValueError:  # another drive
            return None
        if relative.startswith(os.pardir) or os.path.isabs(relative):
            return None
        parts = relative.split(os.sep)
        if any(part in ("site-packages", "dist-packages") for part in parts):
            return None
        if any(fnmatch.fnmatch(parts[-1], pattern) for pattern in self.skip_names):
            return None
        return "/".join(parts)

    def pytest_unconfigure(self, config):
        if self.tool is not None:
            monitoring = sys.monitoring
            monitoring.set_events(self.tool, 0)
            monitoring.register_callback(self.tool, monitoring.events.PY_START, None)
            monitoring.free_tool_id(self.tool)
            self.tool = None


def upload_impact(board, args, run, notes):
    """Send the run's impact map to the board, replacing the suite's."""
    impact = run.get("impact") or {}
    if run.get("impact_blocked"):
        print(f"IMPACT: not recorded: {run['impact_blocked']}; no map was sent.", file=notes)
        return
    if not impact:
        print("IMPACT: no test ran; no map was sent.", file=notes)
        return
    body = json.dumps({"commit": args.commit, "map": impact}).encode("utf-8")
    answer, _ = board.call("PUT", f"/api/v1/suites/{quote(args.suite)}/impact", body=body)
    print(f"IMPACT: the map of {answer['nodes']} tests and {answer['paths']} source files "
          f"at {args.commit[:12] or 'no commit'} replaced the suite's.", file=notes)


def tests_of_changed(board, args, changed):
    """The tests the suite's impact map says execute one of the ``changed`` paths: node id
    -> the first such path; empty when the suite has no map."""
    found = {}
    paths = sorted(set(changed))
    for start in range(0, len(paths), IMPACT_CHUNK):
        chunk = paths[start:start + IMPACT_CHUNK]
        answer, _ = board.call("POST", f"/api/v1/suites/{quote(args.suite)}/impact/nodes",
                               body=json.dumps(chunk).encode("utf-8"))
        for row in answer["nodes"]:
            found.setdefault(row["node"], min(row["paths"]))
    return found
