"""gate's pytest run from the inside: the served file, loaded as the plugin of the one pytest
run gate starts, records the outcome of every selected node (and the files that failed to
collect) to a JSON file for gate to read."""

from __future__ import annotations

import collections
import json
import re

from .measure_batch import failure_line

# The line of a traceback that names the exception: "SyntaxError: invalid syntax".
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b")


def collection_error_line(report):
    """The first line of the error that stopped a file from collecting."""
    text = getattr(report, "longreprtext", "") or str(report.longrepr or "")
    errors = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    named = [line for line in errors if EXCEPTION_LINE.match(line)]
    return named[-1][:300] if named else failure_line(report)


class GateRecorder:
    """Which nodes the run selected and what became of each, as pytest counts them: a
    failure or an error in setup or teardown fails a node, an xfail that fails passes and
    a strict xpass fails (pytest reports them so), a skip is not run, and so is a node the
    session stopped before (-x, --maxfail, an interrupt). The frozen nodes it is given are
    left out of the run when selected."""

    def __init__(self, path, frozen):
        self.path, self.frozen = path, set(frozen)
        self.selected, self.left_out, self.errors = [], [], []
        self.outcomes, self.failed = {}, set()
        self.messages = {}  # a failed node's first failure, its line
        self.seconds = collections.defaultdict(float)  # each node's setup, call, teardown
        self.impact = None  # node -> the source files it executed, with --record-impact
        self.impact_blocked = ""  # why it could not be recorded

    def pytest_collectreport(self, report):
        if report.failed:
            path = report.nodeid or str(getattr(report, "fspath", "") or "conftest.py")
            error = [path, collection_error_line(report)]
            if error not in self.errors:  # once, not once per xdist worker
                self.errors.append(error)

    def pytest_collection_finish(self, session):
        # After every pytest_collection_modifyitems: -k, -m and --deselect have chosen.
        kept = [item for item in session.items if item.nodeid not in self.frozen]
        left_out = [item for item in session.items if item.nodeid in self.frozen]
        if left_out:
            session.items[:] = kept
            session.config.hook.pytest_deselected(items=left_out)
        self.left_out = [item.nodeid for item in left_out]
        self.selected = list(collections.OrderedDict.fromkeys(i.nodeid for i in kept))

    # Under pytest-xdist the workers collect and run; this process (the controller) hears
    # what they collected and each report (XdistController). A worker writes nothing itself.
    def collected_by_worker(self, ids):
        if not self.selected:
            self.selected = list(collections.OrderedDict.fromkeys(ids))

    def worker_done(self, output):
        for node in output.get("flakeboard_left_out", []):
            if node not in self.left_out:
                self.left_out.append(node)
        if self.impact is not None:
            self.impact.update(output.get("flakeboard_impact") or {})
            self.impact_blocked = self.impact_blocked or output.get("flakeboard_impact_blocked")

    def pytest_runtest_logreport(self, report):
        self.seconds[report.nodeid] += getattr(report, "duration", 0.0) or 0.0
        if report.failed:
            self.failed.add(report.nodeid)
            self.messages.setdefault(report.nodeid, failure_line(report))
        elif report.skipped:
            xfailed = hasattr(report, "wasxfail")
            self.outcomes.setdefault(report.nodeid, "pass" if xfailed else "not_run")
        elif report.when == "call":
            self.outcomes[report.nodeid] = "pass"

    def outcome(self, node):
        return "fail" if node in self.failed else self.outcomes.get(node, "not_run")

    def pytest_sessionfinish(self, session, exitstatus):
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:  # an xdist worker: the controller records
            workeroutput["flakeboard_left_out"] = self.left_out
            if self.impact is not None:
                workeroutput["flakeboard_impact"] = self.impact
                workeroutput["flakeboard_impact_blocked"] = self.impact_blocked
            return
        record = {"outcomes": [[node, self.outcome(node)] for node in self.selected],
                  "collection_errors": self.errors,
                  "deselected_frozen": self.left_out,
                  "messages": {node: self.messages[node] for node in self.selected
                               if node in self.messages},
                  "seconds": {node: round(self.seconds[node], 4) for node in self.selected
                              if node in self.seconds},
                  "exitstatus": int(exitstatus)}
        if self.impact is not None:
            record["impact"] = {} if self.impact_blocked else self.impact
            record["impact_blocked"] = self.impact_blocked
        with open(self.path, "w", encoding="utf-8") as handle:
            json.dump(record, handle)


class XdistController:
    """The gate recorder's ears in pytest-xdist's controller (registered only there: its
    hooks exist only with xdist)."""

    def __init__(self, recorder):
        self.recorder = recorder

    def pytest_xdist_node_collection_finished(self, node, ids):
        self.recorder.collected_by_worker(ids)

    def pytest_testnodedown(self, node, error):
        self.recorder.worker_done(getattr(node, "workeroutput", None) or {})
