"""B6e: a real package's start-up cost. A generated project whose conftest imports a module
that takes half a second to import (CPU work, as a large package's import is), with 4
targets by 400 runs in two test modules, each test a few milliseconds:

- ``flakeboard_ci.py measure --exact`` (the session's check in CI's order included);
- the limit: the targets' call phases, each timed by the test body where it runs, ÷ the
  workers, plus one import (each worker imports once, at the same time).

Both run in one fresh virtual environment holding pytest at its pinned version.
"""

from __future__ import annotations

import statistics
import subprocess
import textwrap
from pathlib import Path

from .b6_measure import measure_command, timed, tools_bench
from .call_log import write_calls
from .measure import TIMES, Row, fmt_seconds, progress, repeats, scaled

ID = "B6e"
TOOLS = ["pytest==9.2.0"]
RUNS = 400
IMPORT_S = 0.5  # the expensive module's import, CPU-bound
BODY_S = 0.002
LIMIT_GOAL = 1.3  # measure's time against the limit, at most
GAP = (
    "measure pays the import once in the process that collects, whose children run the "
    "blocks; the session's check in CI's order is a pytest of its own that collects the "
    "whole session, and imports it again."
)

HEAVY = """
    import time

    # A large package's import: half a second of work, once per process.
    _start = time.process_time()
    while time.process_time() - _start < {seconds}:
        pass
"""
TEST = """
def test_{name}():
    start = time.perf_counter()
    time.sleep({body})
    seed = int(os.environ.get("PATCH_SEED", "0"))
    calls.log("{node}", time.perf_counter() - start)
    assert seed % {every} != 5, seed
"""
MODULES = {
    "tests/test_api.py": [("parse", 100), ("render", 1000)],
    "tests/test_cache.py": [("expire", 250), ("evict", 1000)],
}
FILLERS = 20  # tests before the targets in each module


def make_project(root: Path) -> tuple[Path, list[str]]:
    """The project and its targets."""
    (root / "tests").mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    (root / "heavy.py").write_text(textwrap.dedent(HEAVY.format(seconds=IMPORT_S)))
    (root / "conftest.py").write_text("import heavy  # noqa: F401\n")
    write_calls(root, "B6E_CALL_LOG")
    targets = []
    for path, tests in MODULES.items():
        fillers = "".join(
            f"\ndef test_filler_{i}():\n    assert {i} >= 0\n" for i in range(FILLERS)
        )
        bodies = "".join(
            TEST.format(name=name, body=BODY_S, node=f"{path}::test_{name}", every=every)
            for name, every in tests
        )
        (root / path).write_text("import os\nimport time\n\nimport calls\n" + fillers + bodies)
        targets += [f"{path}::test_{name}" for name, _ in tests]
    (root / "flake_targets.txt").write_text("\n".join(targets) + "\n")
    return root, targets


def import_seconds(python: Path, project: Path) -> float:
    """The expensive module's import, timed in a process of its own."""
    done = subprocess.run(
        [
            str(python),
            "-c",
            "import time; t = time.perf_counter(); import heavy; print(time.perf_counter() - t)",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout)


def run(scale: float, backend: str, workdir) -> list[Row]:
    workdir, workers, _, python = tools_bench(ID, workdir, scale, TOOLS)
    runs = scaled(scale, RUNS, 20)
    what = (f"measure with a 0.5 s import, 4 targets {TIMES} {runs} runs, {workers} workers, "
            f"against the limit (call phases ÷ workers + one import)")
    project, targets = make_project(workdir / "project")
    imported = import_seconds(python, project)
    rounds = repeats(scale, 3)
    progress(f"{ID}: measure --exact, {runs} runs, {rounds} rounds")
    seconds, limits = [], []
    for rnd in range(rounds):
        log = workdir / f"calls-{rnd}.log"
        # Its start-up, not the diagnosis of its flaky targets (B11 times that).
        took, _, _ = timed(measure_command(python, runs, workers, workdir / "report.json",
                                           "--exact", "--no-diagnose"), project,
                           B6E_CALL_LOG=str(log), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", TERM="dumb")
        logged = [line.split("\t") for line in log.read_text().splitlines()]
        seconds.append(took)
        limits.append(sum(float(s) for _, node, s in logged if node in targets) / workers
                      + imported)
    took, limit_s = statistics.median(seconds), statistics.median(limits)
    return [Row(
        ID, backend, what, subject=fmt_seconds(took), baseline=f"{fmt_seconds(limit_s)} (limit)",
        goal=f"≤ {LIMIT_GOAL:g}{TIMES} the limit", ratio=took / limit_s, limit=LIMIT_GOAL,
        detail=(f"the import {fmt_seconds(imported)}; measure "
                f"{', '.join(map(fmt_seconds, seconds))} against limits "
                f"{', '.join(map(fmt_seconds, limits))}"),
        figures={"runs": runs, "workers": workers, "import_s": round(imported, 3),
                 "measure_s": [round(s, 3) for s in seconds],
                 "limit_s": [round(s, 3) for s in limits]},
    ).judge()]
