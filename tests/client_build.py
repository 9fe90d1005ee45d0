"""The served client built before a test session collects its modules: conftest.py takes
``pytest_sessionstart`` from here. Some test modules load client/flakeboard_ci.py at
import, so a build in a fixture (which runs after collection) would let them test a stale
file, or fail to collect in a checkout that never built it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest


def pytest_sessionstart(session):
    """Build ``client/flakeboard_ci.py`` under the session's root from ``client/src``: in
    the process that starts the run, since an xdist worker starts only after it."""
    if hasattr(session.config, "workerinput"):
        return
    build = session.config.rootpath / "client" / "build.py"
    if _built_since_its_sources(build):
        return
    done = subprocess.run([sys.executable, str(build)], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise pytest.UsageError(f"client/build.py could not build the client: {done.stderr}")


def _built_since_its_sources(build: Path) -> bool:
    """True when the built file is newer than every file it is made of, as make reads it
    (build.py touches the file when it finds it up to date): the assembly and its checks
    take half a second before any worker can start."""
    spec = importlib.util.spec_from_file_location("flakeboard_client_sources", build)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        built = module.TARGET.stat().st_mtime_ns
        return all(path.stat().st_mtime_ns <= built for path in module.sources())
    except OSError:
        return False
