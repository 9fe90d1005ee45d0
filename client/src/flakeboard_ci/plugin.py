"""This file as a pytest plugin (-p flakeboard_ci): its options, and what each registers,
measure's worker or gate's recorder. Without either option it does nothing."""

from __future__ import annotations

from .gate_recorder import GateRecorder
from .measure_worker import MeasureWorker


def pytest_addoption(parser):
    parser.addoption("--flakeboard-worker", metavar="ID:ADDRESS",
                     help="(flakeboard_ci.py measure's own) run the tests it sends")
    parser.addoption("--flakeboard-record", metavar="PATH",
                     help="(flakeboard_ci.py gate's own) write each selected node's outcome "
                          "to PATH")
    parser.addoption("--flakeboard-leave-out", metavar="PATH",
                     help="(flakeboard_ci.py gate's own) leave the node ids of PATH, one a "
                          "line, out of the run")


def pytest_configure(config):
    address = config.getoption("flakeboard_worker", None)
    if address:
        config.pluginmanager.register(MeasureWorker(address), "flakeboard-measure-worker")
    record = config.getoption("flakeboard_record", None)
    if record:
        leave_out = config.getoption("flakeboard_leave_out", None)
        frozen = []
        if leave_out:
            with open(leave_out, encoding="utf-8") as handle:
                frozen = [line for line in handle.read().splitlines() if line]
        config.pluginmanager.register(GateRecorder(record, frozen), "flakeboard-gate-recorder")
