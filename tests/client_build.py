"""The served client built before a test session collects its modules: conftest.py takes
``pytest_sessionstart`` from here. Some test modules load client/flakeboard_ci.py at
import, so a build in a fixture (which runs after collection) would let them test a stale
file, or fail to collect in a checkout that never built it."""

from __future__ import annotations

import subprocess
import sys

import pytest


def pytest_sessionstart(session):
    """Build ``client/flakeboard_ci.py`` under the session's root from ``client/src``: in
    the process that starts the run, since an xdist worker starts only after it."""
    if hasattr(session.config, "workerinput"):
        return
    build = session.config.rootpath / "client" / "build.py"
    done = subprocess.run([sys.executable, str(build)], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise pytest.UsageError(f"client/build.py could not build the client: {done.stderr}")
