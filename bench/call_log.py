"""The call phases the benchmarks' limits count: a generated project's calls.py, with which
each test body times itself and logs the time with the process that ran it (gate's run,
measure's workers), where an environment variable names a file."""

from __future__ import annotations

import textwrap
from pathlib import Path

# Not a hook around each call (a conftest.py's pytest_runtest_call): that would give each of
# measure's runs a pass of pytest's protocol of its own, which a plain test's runs in a row share.
CALLS = '''
    import functools
    import os
    import time

    LOG = None


    def log(node, seconds):
        global LOG
        path = os.environ.get("{env}")
        if not path:
            return
        if LOG is None:  # unbuffered and appended: a forked child's line is never lost
            LOG = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(LOG, f"{{os.getpid()}}\\t{{node}}\\t{{seconds}}\\n".encode())


    def timed(test):
        """The test, logging its body's time (its fixtures are asked for as before)."""
        @functools.wraps(test)
        def timed_test(*args, **kwargs):
            start = time.perf_counter()
            try:
                return test(*args, **kwargs)
            finally:
                log(test.__name__, time.perf_counter() - start)
        return timed_test
'''


def write_calls(root: Path, env: str) -> None:
    """The project's calls.py: what each test body logs its time with, where ``env``
    names a file."""
    (root / "calls.py").write_text(textwrap.dedent(CALLS.format(env=env)))
