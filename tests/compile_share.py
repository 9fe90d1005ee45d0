"""The test modules compiled once for a run, not once a worker: conftest.py's
``pytest_collection`` calls ``compile_first`` in each worker before it collects.

Each xdist worker imports every test module of the run, and a module's first import
compiles it and rewrites its asserts: about 6 s of CPU a worker for the fast lane's modules.
``make test`` and ``make test-fast`` let Python cache what it compiles (in ``__pycache__``,
which git ignores), so a worker reads a module another has compiled. For that to help in a
run's first collection, the workers must not compile the same modules at the same time: so
worker k of n imports the k-th of n slices of the modules first, then collects as usual,
reading the other slices from the cache its peers wrote meanwhile. Worker 0 imports nothing
ahead. Without the cache (``PYTHONDONTWRITEBYTECODE``) nothing is imported ahead.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from pathlib import Path

from tests.lanes import module_left_out


def module_name(path: Path) -> str:
    """The name pytest imports a test module by: the dotted path from the outermost
    folder of its package (``tests/test_x.py`` in the package ``tests``: ``tests.test_x``)."""
    parts = [path.stem]
    folder = path.parent
    while (folder / "__init__.py").exists():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts)


def run_modules(config) -> list[Path]:
    """The test modules directly in the folders the run names, in the order pytest collects
    them, less those the run's ``-m`` leaves out whole (tests/lanes.py). A run naming files
    shares nothing: it has little to compile."""
    folders = [Path(arg) for arg in config.args if Path(arg).is_dir()]
    if len(folders) != len(config.args):
        return []
    markexpr = config.getoption("markexpr", "")
    return [path for folder in folders for path in sorted(folder.glob("test_*.py"))
            if not (markexpr and module_left_out(path, markexpr))]


def worker_slice(modules: list, worker: int, workers: int) -> list:
    """Worker ``worker``'s share of ``modules``: the slices of the n workers are in the
    modules' order, together hold each module once, and differ in size by one at most."""
    return modules[worker * len(modules) // workers:(worker + 1) * len(modules) // workers]


def compile_first(session) -> None:
    """In worker k of n, import the k-th slice of the run's modules. Not in the run's first
    process, nor in a pytest that one of its tests starts (which inherits the worker's
    PYTEST_XDIST_WORKER): only a worker has its ``workerinput``."""
    worker = getattr(session.config, "workerinput", None)
    if sys.dont_write_bytecode or worker is None or worker["workercount"] < 2:
        return
    index = int(worker["workerid"].removeprefix("gw"))
    for path in worker_slice(run_modules(session.config), index, worker["workercount"]):
        # A module that fails to import is left to collection, which imports it again
        # and reports the error in its place.
        with contextlib.suppress(Exception):
            importlib.import_module(module_name(path))
