"""B6b: naming the cause of order-dependent tests, on a generated project of 500 small tests
in 10 modules where one test pollutes the process (a victim in another module fails only
after it) and one sets state up (a brittle test in another module passes only after it):

- ``flakeboard_ci.py measure`` on both targets, 20 runs each: it must name the polluter and
  the state-setter;
- asottile's ``detect-test-pollution`` on the victim (it finds polluters only), against
  ``measure`` on the victim alone: the same polluter, in at most its time.

Both tools run in one fresh virtual environment holding pytest at its pinned version, with
the collection's order (no shuffling plugin). ``measure``'s time holds its own runs of the
target, the session's run in CI's order and its checks, then the bisection;
detect-test-pollution's holds its collection, its check that the victim fails after the
tests before it, then its bisection.
"""

from __future__ import annotations

import os
import re
import subprocess
import textwrap
import time
from pathlib import Path

from .b6_measure import measure_command, tools_bench
from .measure import TIMES, Row, fmt_seconds, progress, unavailable

ID = "B6b"
TOOLS = ["pytest==9.2.0", "detect-test-pollution==1.2.0"]
MODULES, PER_MODULE = 10, 50
RUNS = 20
VICTIM = "tests/test_m07.py::test_victim"
POLLUTER = "tests/test_m02.py::test_pollutes"
BRITTLE = "tests/test_m08.py::test_brittle"
STATE_SETTER = "tests/test_m03.py::test_sets_up"
SPECIAL = {  # module index -> its test that leaves or reads state
    2: '''
    def test_pollutes():
        os.environ["B6B_POLLUTED"] = "1"
''',
    3: '''
    def test_sets_up():
        os.environ["B6B_READY"] = "1"
''',
    7: '''
    def test_victim():
        assert "B6B_POLLUTED" not in os.environ, "polluted"
''',
    8: '''
    def test_brittle():
        assert os.environ.get("B6B_READY"), "nothing set up"
''',
}
NAMED = re.compile(r"(fails|passes) only after (\S+) \((polluter|state-setter)\)")
FOUND = re.compile(r"the polluting test is: (\S+)")
MEASURE_MUST = 1.0  # measure's time against detect-test-pollution's, at most


def make_project(root: Path, per_module: int) -> Path:
    tests = root / "tests"
    tests.mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\n")
    for index in range(MODULES):
        special = SPECIAL.get(index)
        fillers = per_module - (special is not None)
        body = "\n\n".join(f"def test_{index:02d}_{i}():\n    assert {i} + 1 == {i + 1}\n"
                           for i in range(fillers))
        source = "import os\n\n\n" + body + ("\n\n" + textwrap.dedent(special) if special else "")
        (tests / f"test_m{index:02d}.py").write_text(source)
    return root


def timed_run(command: list[str], cwd: Path, **env) -> tuple[float, str]:
    """Wall seconds and what the command printed (stdout, then stderr)."""
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("DJANGO_SETTINGS_MODULE", "PYTHONPATH")}
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                          env={**environment, "PYTHONHASHSEED": "0", "TERM": "dumb", **env})
    return time.perf_counter() - start, done.stdout + done.stderr


def named_by_measure(python: Path, project: Path, targets: list[str], workers: int):
    """measure's wall seconds, and the test and role it named for each target."""
    (project / "flake_targets.txt").write_text("\n".join(targets) + "\n")
    seconds, said = timed_run(measure_command(python, RUNS, workers, project / "report.json"),
                              project)
    named = {}
    for line in said.splitlines():
        found = NAMED.search(line)
        target = line[16:].split(": ", 1)[0]
        if line.startswith("order_dependent ") and target in targets and found:
            named[target] = (found.group(2), found.group(3))
    return seconds, named


def found_by_detect_test_pollution(python: Path, project: Path) -> tuple[float, str, str]:
    """Its wall seconds, the polluter it found (or None) and its last line."""
    seconds, said = timed_run([str(python.parent / "detect-test-pollution"), "--failing-test",
                               VICTIM, "--tests", "tests"], project)
    found = FOUND.findall(said)
    last = said.strip().splitlines()[-1] if said.strip() else ""
    return seconds, (found[-1] if found else None), last


def run(scale: float, backend: str, workdir) -> list[Row]:
    workdir, workers, full, python = tools_bench(ID, workdir, scale, TOOLS)
    per_module = PER_MODULE if full else 10
    if not full:
        os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    project = make_project(workdir / "project", per_module)
    total = MODULES * per_module

    progress(f"{ID}: measure on the victim and the brittle test, {RUNS} runs each")
    both_s, named = named_by_measure(python, project, [VICTIM, BRITTLE], workers)
    expected = {VICTIM: (POLLUTER, "polluter"), BRITTLE: (STATE_SETTER, "state-setter")}
    right = [target for target, answer in expected.items() if named.get(target) == answer]
    said = "; ".join(f"{target}: {' '.join(named[target]) if target in named else 'nothing'}"
                     for target in expected)
    rows = [Row(ID, backend, f"measure names the polluter and the state-setter, {total} tests",
                subject=f"{len(right)} of 2 named", goal="both named", ratio=len(right) / 2,
                limit=1, at_most=False,
                detail=f"{said}; {fmt_seconds(both_s)} with {workers} workers",
                figures={"tests": total, "runs": RUNS, "workers": workers,
                         "seconds": round(both_s, 3), "named": named}).judge()]
    against = "measure's polluter against detect-test-pollution's, the victim alone"
    if not full:
        return [*rows, unavailable(ID, backend, against, "a smoke run's tool environment")]

    progress(f"{ID}: detect-test-pollution on the victim")
    tool_s, tool_found, tool_said = found_by_detect_test_pollution(python, project)
    progress(f"{ID}: measure on the victim alone")
    alone_s, alone_named = named_by_measure(python, project, [VICTIM], workers)
    ours = alone_named.get(VICTIM, (None, None))[0]
    return [*rows, Row(
        ID, backend, against, subject=fmt_seconds(alone_s),
        baseline=f"{fmt_seconds(tool_s)} (detect-test-pollution)",
        goal=f"the same polluter, ≤ {MEASURE_MUST:g}{TIMES} its time",
        ratio=alone_s / tool_s, limit=MEASURE_MUST,
        detail=(f"measure named {ours or 'nothing'}, detect-test-pollution "
                f"{tool_found or 'nothing'} ({tool_said}); measure's time holds its {RUNS} "
                f"runs of the victim and the session's run too"),
        figures={"measure_s": round(alone_s, 3), "tool_s": round(tool_s, 3),
                 "measure_found": ours, "tool_found": tool_found},
    ).judge(ours == tool_found == POLLUTER)]
