"""B11: what the diagnosis adds (SPEC 2.4d, docs/diagnosis.md). A generated project with a
test that flips on its random input (seeded), one that fails when it does not get the CPU
for the time it spins (timing) and two steady tests, measured 200 runs each:

- ``flakeboard_ci.py measure --exact`` with its experiments (the default): the coin's
  failing seeds replayed beside passing ones, each replay in a process that has run nothing
  (a pristine fork), the deadline's too, then 100 of its runs under CPU load;
- the same measurement with ``--no-diagnose``.

The figure is the time the experiments add, against the measurement's own.
Both run in one fresh virtual environment holding pytest at its pinned version.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import time
from pathlib import Path

from .b6_measure import CLIENT, tools_python
from .measure import TIMES, Row, fmt_seconds, progress, repeats, scaled

ID = "B11"
TOOLS = ["pytest==9.2.0"]
RUNS = 200
ADDED_GOAL = 1.0  # the experiments' added time against measure's own, at most
TESTS = '''
import random
import time


def test_coin():
    assert random.random() > 0.1


def test_deadline():
    wall, cpu = time.perf_counter(), time.process_time()
    while time.process_time() - cpu < 0.002:
        pass
    assert time.perf_counter() - wall < 0.0025


def test_parse():
    assert sorted(random.sample(range(100), 10))


def test_render():
    time.sleep(0.001)
'''
TARGETS = ["tests/test_kinds.py::test_coin", "tests/test_kinds.py::test_deadline",
           "tests/test_kinds.py::test_parse", "tests/test_kinds.py::test_render"]


def make_project(root: Path) -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "tests" / "test_kinds.py").write_text(TESTS)
    (root / "flake_targets.txt").write_text("\n".join(TARGETS) + "\n")
    return root


def measured(command: list[str], project: Path) -> tuple[float, dict[str, str]]:
    """Wall seconds of a measure command, and what its DIAGNOSIS lines said, by node."""
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
           "TERM": "dumb"}
    for name in ("DJANGO_SETTINGS_MODULE", "PYTHONPATH"):
        env.pop(name, None)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    said = dict(re.findall(r"^DIAGNOSIS (\S+): (\w+)", done.stderr, re.M))
    return seconds, said


def run(scale: float, backend: str, workdir) -> list[Row]:
    workdir = Path(workdir) / "b11"
    workers = os.cpu_count() or 1
    runs = scaled(scale, RUNS, 20)
    what = (f"measure's diagnosis (seeds replayed, CPU load) of 4 targets {TIMES} {runs} runs, "
            f"{workers} workers, against measure --no-diagnose")
    python = tools_python(ID, workdir, TOOLS, scale >= 1)
    project = make_project(workdir / "project")
    rounds = repeats(scale, 3)
    progress(f"{ID}: measure --exact with and without its experiments, {rounds} rounds")
    command = [str(python), str(CLIENT), "measure", "flake_targets.txt", "--runs", str(runs),
               "--workers", str(workers), "--exact", "--output", str(workdir / "report.json")]
    alone, diagnosed, said = [], [], {}
    for _ in range(rounds):
        alone.append(measured([*command, "--no-diagnose"], project)[0])
        seconds, said = measured(command, project)
        diagnosed.append(seconds)
    alone_s, diagnosed_s = statistics.median(alone), statistics.median(diagnosed)
    added = diagnosed_s - alone_s
    kinds = ", ".join(f"{node.split('::')[-1]} {kind}" for node, kind in said.items())
    return [Row(
        ID, backend, what, subject=f"+{fmt_seconds(added)}",
        baseline=f"{fmt_seconds(alone_s)} (measure alone)",
        goal=f"adds ≤ {ADDED_GOAL:g}{TIMES} measure's time", ratio=added / alone_s,
        limit=ADDED_GOAL,
        detail=(f"measure with its experiments {', '.join(map(fmt_seconds, diagnosed))}; "
                f"alone {', '.join(map(fmt_seconds, alone))}; diagnosed {kinds or 'none'}"),
        figures={"runs": runs, "workers": workers, "diagnosed": said,
                 "diagnosed_s": [round(s, 3) for s in diagnosed],
                 "alone_s": [round(s, 3) for s in alone]},
    ).judge()]
