"""This file as a pytest plugin (-p flakeboard_ci): its options, and what each registers,
measure's worker (and the seeding of its runs), replay's seeding, or gate's recorder (and
its impact recorder). Without one of them it does nothing."""

from __future__ import annotations

from .gate_recorder import GateRecorder, XdistController
from .impact import ImpactRecorder
from .measure_worker import MeasureWorker
from .seeding import Seeder

# The options the client's own commands pass the pytest they start: (option, the command,
# what it does, its argparse keywords).
OWN_OPTIONS = (
    ("--flakeboard-worker", "measure", "run the tests it sends", {"metavar": "ID:ADDRESS"}),
    ("--flakeboard-seeded", "replay", "seed random, and numpy when imported, from PATCH_SEED "
                                      "before each test's setup and call",
     {"action": "store_true"}),
    ("--flakeboard-record", "gate", "write each selected node's outcome to PATH",
     {"metavar": "PATH"}),
    ("--flakeboard-leave-out", "gate", "leave the node ids of PATH, one a line, out of the run",
     {"metavar": "PATH"}),
    ("--flakeboard-impact", "gate", "record the source files under ROOT each test executes",
     {"metavar": "ROOT"}),
)


def pytest_addoption(parser):
    for option, command, does, keywords in OWN_OPTIONS:
        parser.addoption(option, help=f"(flakeboard_ci.py {command}'s own) {does}", **keywords)


def pytest_configure(config):
    address = config.getoption("flakeboard_worker", None)
    if address or config.getoption("flakeboard_seeded", False):
        config.pluginmanager.register(Seeder(), "flakeboard-seeder")
    if address:
        config.pluginmanager.register(MeasureWorker(address, without_xdist(config)),
                                      "flakeboard-measure-worker")
    record = config.getoption("flakeboard_record", None)
    if record:
        leave_out = config.getoption("flakeboard_leave_out", None)
        frozen = []
        if leave_out:
            with open(leave_out, encoding="utf-8") as handle:
                frozen = [line for line in handle.read().splitlines() if line]
        recorder = GateRecorder(record, frozen)
        config.pluginmanager.register(recorder, "flakeboard-gate-recorder")
        controller = xdist_controller(config)
        if controller:
            config.pluginmanager.register(XdistController(recorder), "flakeboard-gate-xdist")
        impact_root = config.getoption("flakeboard_impact", None)
        if impact_root:
            recorder.impact = {}
            if not controller:  # under xdist each worker records its own tests
                config.pluginmanager.register(
                    ImpactRecorder(impact_root, recorder, config), "flakeboard-impact")


def without_xdist(config):
    """A measure worker is one pytest process, whatever the project's addopts say: set
    pytest-xdist's workers aside (before its own pytest_configure, which runs last) and
    return the -n they asked for, or None."""
    asked = getattr(config.option, "numprocesses", None)
    if not asked:
        return None
    config.option.numprocesses, config.option.dist, config.option.tx = 0, "no", []
    return str(asked)


def xdist_controller(config):
    """Whether this process is pytest-xdist's controller: it will hand the tests to workers
    (as its own pytest_configure, which runs last, decides)."""
    return (config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput")
            and getattr(config.option, "dist", "no") != "no"
            and bool(getattr(config.option, "tx", None)))
