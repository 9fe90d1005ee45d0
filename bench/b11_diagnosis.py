"""B11: what the diagnosis adds (SPEC 2.4d, docs/diagnosis.md). A generated project with a
test that flips on its random input (seeded), one that fails when it does not get the CPU
for the time it spins (timing) and two steady tests, measured 200 runs each:

- ``flakeboard_ci.py measure --exact`` with its experiments (the default): the coin's
  failing seeds replayed beside passing ones, each replay in a process that has run nothing
  (a pristine fork), the deadline's too, then 100 of its runs under CPU load;
- the same measurement with ``--no-diagnose``.

The figure is the time the experiments take (measure runs them once every target's result
line is out: from the last result line to the last DIAGNOSIS line, each line timed as it
comes), against the measurement's own without them.
Both run in one fresh virtual environment holding pytest at its pinned version.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import time
from pathlib import Path
from typing import NamedTuple

from .b6_measure import measure_command, tools_bench
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
DIAGNOSIS = re.compile(r"DIAGNOSIS (\S+): (\w+)")
RESULT = re.compile(r"(stable|flaky|broken|order_dependent|repeat_unsafe) +\S")
TARGETS = ["tests/test_kinds.py::test_coin", "tests/test_kinds.py::test_deadline",
           "tests/test_kinds.py::test_parse", "tests/test_kinds.py::test_render"]


def make_project(root: Path) -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "tests" / "test_kinds.py").write_text(TESTS)
    (root / "flake_targets.txt").write_text("\n".join(TARGETS) + "\n")
    return root


class Measured(NamedTuple):
    seconds: float  # the whole command's wall time
    experiments: float  # from its last result line to its last DIAGNOSIS line
    said: dict[str, str]  # each DIAGNOSIS line's category, by node


def measured(command: list[str], project: Path) -> Measured:
    """A measure command's wall seconds, the seconds its experiments took (measure runs
    them once every target's result line is out, and says each in a DIAGNOSIS line), and
    what those lines said, by node: each line of its stderr is timed as it comes."""
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
           "TERM": "dumb"}
    for name in ("DJANGO_SETTINGS_MODULE", "PYTHONPATH"):
        env.pop(name, None)
    start = time.perf_counter()
    lines = []
    with subprocess.Popen(command, cwd=project, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True) as proc:
        for line in proc.stderr:
            lines.append((time.perf_counter(), line))
    seconds = time.perf_counter() - start
    said = {m[1]: m[2] for _, line in lines if (m := DIAGNOSIS.match(line))}
    diagnoses = [at for at, line in lines if DIAGNOSIS.match(line)]
    results = [at for at, line in lines if RESULT.match(line) and (not diagnoses
                                                                  or at < diagnoses[0])]
    experiments = diagnoses[-1] - results[-1] if diagnoses and results else 0.0
    return Measured(seconds, experiments, said)


def run(scale: float, backend: str, workdir) -> list[Row]:
    workdir, workers, _, python = tools_bench(ID, workdir, scale, TOOLS)
    runs = scaled(scale, RUNS, 20)
    what = (f"measure's diagnosis (seeds replayed, CPU load) of 4 targets {TIMES} {runs} runs, "
            f"{workers} workers, against measure --no-diagnose")
    project = make_project(workdir / "project")
    rounds = repeats(scale, 3)
    progress(f"{ID}: measure --exact with and without its experiments, {rounds} rounds")
    command = measure_command(python, runs, workers, workdir / "report.json", "--exact")
    alone, diagnosed = [], []
    for _ in range(rounds):
        alone.append(measured([*command, "--no-diagnose"], project).seconds)
        diagnosed.append(measured(command, project))
    experiments = statistics.median(run.experiments for run in diagnosed)
    alone_s = statistics.median(alone)
    said = diagnosed[-1].said
    kinds = ", ".join(f"{node.split('::')[-1]} {kind}" for node, kind in said.items())
    return [Row(
        ID, backend, what, subject=f"+{fmt_seconds(experiments)}",
        baseline=f"{fmt_seconds(alone_s)} (measure alone)",
        goal=f"adds ≤ {ADDED_GOAL:g}{TIMES} measure's time", ratio=experiments / alone_s,
        limit=ADDED_GOAL,
        detail=(f"its experiments {', '.join(fmt_seconds(r.experiments) for r in diagnosed)} "
                f"within measure's {', '.join(fmt_seconds(r.seconds) for r in diagnosed)}; "
                f"measure alone {', '.join(map(fmt_seconds, alone))}; diagnosed "
                f"{kinds or 'none'}"),
        figures={"runs": runs, "workers": workers, "diagnosed": said,
                 "experiments_s": [round(r.experiments, 3) for r in diagnosed],
                 "diagnosed_s": [round(r.seconds, 3) for r in diagnosed],
                 "alone_s": [round(s, 3) for s in alone]},
    ).judge()]
