"""B6: measuring flakiness, 6 targets by 200 runs on a generated project of small tests with
known, seed-driven failure rates (two of them about 50 ms slow, one behind an expensive
module import), all with the same n and the same workers:

- ``flakeboard_ci.py measure --exact``;
- the article's budget script, a fresh ``python -m pytest NODEID`` per run, timed at 20
  runs a target and scaled to 200;
- pytest-flakefinder with pytest-xdist, and pytest-repeat with pytest-xdist;
- ``measure --fresh`` on one worker, a process per run as the script, per run against it;
- the physical limit: the sum of the test bodies' call phases ÷ the workers.

Every tool runs in one fresh virtual environment holding pytest and the three plugins at
pinned versions, as a project under test would. Peak RSS is the largest single process's.
The fails counts of ``measure`` and of the script are compared at the script's n.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import NamedTuple

from flakeboard.rules import plural

from .call_log import write_calls
from .measure import TIMES, Row, fmt_bytes, fmt_seconds, progress, unavailable
from .scratch import ROOT

ID = "B6"
CLIENT = ROOT / "client" / "flakeboard_ci.py"
RUNS = 200
SCRIPT_RUNS = 20
SEED_BASE = 9137
TOOLS = ["pytest==9.2.0", "pytest-xdist==3.8.0", "execnet==2.1.2",
         "pytest-flakefinder==1.1.0", "pytest-repeat==0.9.4"]
SCRIPT_GOAL, SCRIPT_MUST = 100, 30  # measure at least this many times faster
PLUGIN_MUST = 1.3  # measure's time against the faster plugin's, at most
LIMIT_GOAL = 3  # measure's time against the physical limit, at most
FRESH_MUST = 1.0  # measure --fresh's time a run against the script's, at most
GAP = ("The script pays an interpreter start and a collection per run; the plugins and "
       "measure collect once per worker. What separates measure from the limit is the "
       "workers' start-up and collection, and the last target's tail on one worker.")

SEEDED = '''
    import os

    from calls import timed


    def seed():
        return int(os.environ.get("PATCH_SEED", "0"))


    @timed
    def test_two_percent():
        assert seed() % 50 != 7


    @timed
    def test_ten_percent():
        assert seed() % 10 != 3


    @timed
    def test_steady(tmp_path):
        (tmp_path / "x").write_text("x")
        assert sum(range(1000)) == 499500
'''
SLOW = '''
    import os
    import time

    from calls import timed


    @timed
    def test_slow_five_percent():
        time.sleep(0.05)
        assert int(os.environ.get("PATCH_SEED", "0")) % 20 != 11


    @timed
    def test_slow_steady():
        time.sleep(0.05)
'''
HEAVY = '''
    import hashlib
    import os

    from calls import timed

    # An expensive import: a table built when the module is first imported.
    TABLE = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(150_000)]


    @timed
    def test_heavy_one_percent():
        assert TABLE[int(os.environ.get("PATCH_SEED", "0")) % len(TABLE)][:2] != "00"
'''
# The phases the limit counts: each test body times itself (calls.py, where B6_CALL_LOG names
# a file). A hook around each call would give measure's runs a pass of pytest's protocol each.
FILLER = "\n".join(f"def test_filler_{i}():\n    assert {i} + 1 == {i + 1}\n" for i in range(30))
TARGETS = [  # every one's outcome depends only on PATCH_SEED
    "tests/test_seeded.py::test_two_percent",
    "tests/test_seeded.py::test_ten_percent",
    "tests/test_seeded.py::test_steady",
    "tests/test_slow.py::test_slow_five_percent",
    "tests/test_slow.py::test_slow_steady",
    "tests/test_heavy.py::test_heavy_one_percent",
]


def make_project(root: Path, targets: list[str]) -> Path:
    tests = root / "tests"
    tests.mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\npythonpath = .\n")  # calls.py imports
    write_calls(root, "B6_CALL_LOG")
    for name, source in (("seeded", SEEDED), ("slow", SLOW), ("heavy", HEAVY)):
        (tests / f"test_{name}.py").write_text(textwrap.dedent(source) + "\n\n" + FILLER)
    (root / "flake_targets.txt").write_text("\n".join(targets) + "\n")
    return root


def make_tools(venv: Path, tools: list[str] = TOOLS) -> Path:
    """A fresh virtual environment with pytest and the plugins (or ``tools``); its python."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet",
                    "--disable-pip-version-check", *tools], check=True)
    return python


def tools_python(bench_id: str, workdir: Path, tools: list[str], full: bool) -> Path:
    """A full run's python: a fresh environment with ``tools`` (workdir/venv, shared by both
    backends' passes). A smoke run installs nothing (it may have no network): the board's own
    interpreter."""
    if not full:
        return Path(sys.executable)
    progress(f"{bench_id}: a fresh environment with {', '.join(tools)}")
    return make_tools(workdir / "venv", tools)


class ClientBench(NamedTuple):
    """Where a benchmark of the client works (a folder of its own below the run's), the
    workers its commands run on (one per CPU), and whether the run is full (a smoke run's
    scale is under 1)."""

    workdir: Path
    workers: int
    full: bool


def client_bench(bench_id: str, workdir, scale: float) -> ClientBench:
    return ClientBench(Path(workdir) / bench_id.lower(), os.cpu_count() or 1, scale >= 1)


class ToolsBench(NamedTuple):
    """A ClientBench and the interpreter its commands run with (``tools_python``)."""

    workdir: Path
    workers: int
    full: bool
    python: Path


def tools_bench(bench_id: str, workdir, scale: float, tools: list[str]) -> ToolsBench:
    """The ClientBench of a benchmark that asks nothing of the board before it installs
    ``tools``, and its interpreter. One that must first find the board's route it needs
    (B6c, B6d) calls client_bench, then tools_python once the route is there."""
    bench = client_bench(bench_id, workdir, scale)
    return ToolsBench(*bench, tools_python(bench_id, bench.workdir, tools, bench.full))


def measure_command(python: Path, runs: int, workers: int, output: Path,
                    *options: str) -> list[str]:
    """The client's measure of the project's flake_targets.txt: ``runs`` runs a target on
    ``workers`` workers, the report written to ``output``."""
    return [str(python), str(CLIENT), "measure", "flake_targets.txt", "--runs", str(runs),
            "--workers", str(workers), "--output", str(output), *options]


# Runs the command given and prints the largest RSS (KiB) of any process under it.
RSS_WRAPPER = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
               "sys.exit(code)")


def timed(command: list[str], cwd: Path, **env) -> tuple[float, int, str]:
    """Wall seconds, the largest process's peak RSS in bytes, and stdout."""
    environment = {**os.environ, "PYTHONHASHSEED": "0", **env}
    environment.pop("DJANGO_SETTINGS_MODULE", None)
    environment.pop("PYTHONPATH", None)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", RSS_WRAPPER, *command], cwd=cwd,
                          env=environment, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    rss = int(done.stderr.strip().splitlines()[-1]) * 1024
    return seconds, rss, done.stdout


def script_fails(python: Path, project: Path, targets: list[str],
                 runs: int) -> tuple[float, int, dict[str, int]]:
    """The article's way: a fresh interpreter per run, PATCH_SEED = seed base + run."""
    fails, rss, start = {}, 0, time.perf_counter()
    for nodeid in targets:
        fails[nodeid] = 0
        for i in range(runs):
            _, peak, out = timed([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                  nodeid], project, PATCH_SEED=str(SEED_BASE + i))
            rss = max(rss, peak)
            fails[nodeid] += " passed" not in out or " failed" in out
    return time.perf_counter() - start, rss, fails


def measure_fails(python: Path, project: Path, runs: int, workers: int, out: Path):
    # The script diagnoses nothing: neither does measure here (B11 times its diagnosis).
    seconds, rss, _ = timed(measure_command(python, runs, workers, out, "--exact",
                                            "--no-diagnose"), project, TERM="dumb")
    report = json.loads(out.read_text())
    return seconds, rss, {row["nodeid"]: row["fails"] for row in report}


def fresh_seconds(python: Path, project: Path, runs: int, out: Path) -> float:
    """measure --fresh on one worker, as the script runs: a process per run, one at a
    time (its collection and checks included)."""
    seconds, _, _ = timed(measure_command(python, runs, 1, out, "--fresh", "--exact",
                                          "--no-diagnose"), project, TERM="dumb")
    return seconds


def run(scale: float, backend: str, workdir) -> list[Row]:
    workdir, workers, full, python = tools_bench(ID, workdir, scale, TOOLS)
    # A smoke run installs nothing (it may have no network): the board's own interpreter,
    # which has pytest (its other plugins not loaded), two targets and no plugin baselines.
    script_runs = SCRIPT_RUNS if full else 1
    runs = RUNS if full else 3
    targets = TARGETS if full else TARGETS[:2]
    if not full:
        os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    project = make_project(workdir / "project", targets)
    figures, times, peaks = {"runs": runs, "workers": workers, "targets": len(targets)}, {}, {}

    progress(f"{ID}: the article's script, {script_runs} runs a target")
    script_s, peaks["script"], script_counts = script_fails(python, project, targets,
                                                             script_runs)
    times["script"] = script_s * runs / script_runs
    _, _, measured_counts = measure_fails(python, project, script_runs, workers,
                                          workdir / "same-n.json")
    mismatched = [n for n in targets if script_counts[n] != measured_counts.get(n)]
    progress(f"{ID}: measure --fresh, {script_runs} runs a target, 1 worker")
    fresh_s = fresh_seconds(python, project, script_runs, workdir / "fresh.json")
    script_run_s = script_s / (len(targets) * script_runs)
    fresh_run_s = fresh_s / (len(targets) * script_runs)

    limit_s = None
    if full:
        selection = [*targets, "-n", str(workers), "-q", "-p", "no:cacheprovider"]
        progress(f"{ID}: pytest-flakefinder + xdist, {runs} runs")
        times["flakefinder"], peaks["flakefinder"], _ = timed(
            [str(python), "-m", "pytest", "--flake-finder", f"--flake-runs={runs}",
             *selection], project)
        progress(f"{ID}: pytest-repeat + xdist, {runs} runs (and the call phases)")
        calls = workdir / "calls.log"
        times["repeat"], peaks["repeat"], _ = timed(
            [str(python), "-m", "pytest", f"--count={runs}", *selection], project,
            B6_CALL_LOG=str(calls))
        limit_s = sum(float(line.split("\t")[-1])
                      for line in calls.read_text().splitlines()) / workers
    progress(f"{ID}: measure --exact, {runs} runs")
    times["measure"], peaks["measure"], _ = measure_fails(python, project, runs, workers,
                                                          workdir / "report.json")

    total = len(targets) * runs
    figures.update({
        "script_runs": script_runs,
        "seconds": {k: round(v, 3) for k, v in times.items()},
        "runs_per_second": {k: round(total / v, 1) for k, v in times.items()},
        "peak_rss_bytes": peaks,
        "limit_s": limit_s and round(limit_s, 3),
        "script_measured_s": round(script_s, 2),
        "fresh_s": round(fresh_s, 3),
        "seconds_a_run": {"script": round(script_run_s, 4), "fresh": round(fresh_run_s, 4)},
        "fails": {"script": script_counts, "measure": measured_counts},
    })
    rates = ", ".join(f"{k} {total / v:,.0f} runs/s, {fmt_bytes(peaks[k])}"
                      for k, v in times.items())
    what = f"{len(targets)} targets {TIMES} {runs} runs, {workers} workers"
    rows = [
        Row(ID, backend, f"measure against the article's script, {what}",
            subject=fmt_seconds(times["measure"]),
            baseline=f"{fmt_seconds(times['script'])} (scaled from {plural(script_runs, 'run')})",
            goal=f"≥ {SCRIPT_MUST}{TIMES} faster (goal {SCRIPT_GOAL}{TIMES})",
            ratio=times["script"] / times["measure"], limit=SCRIPT_MUST, at_most=False,
            detail=rates, figures=figures).judge(),
        Row(ID, backend, f"fails counts against the script at {plural(script_runs, 'run')}, "
            "seed-driven targets",
            subject=f"{len(targets) - len(mismatched)} of {len(targets)} identical",
            goal="all identical", ratio=(len(targets) - len(mismatched)) / len(targets),
            limit=1, at_most=False,
            detail=", ".join(mismatched) or "every count equal").judge(),
        Row(ID, backend, "measure --fresh against the script, a process per run, 1 worker",
            subject=f"{1000 * fresh_run_s:.0f} ms a run",
            baseline=f"{1000 * script_run_s:.0f} ms a run",
            goal=f"≤ {FRESH_MUST:g}{TIMES} the script's time a run",
            ratio=fresh_run_s / script_run_s, limit=FRESH_MUST,
            detail=(f"{len(targets)} targets {TIMES} {plural(script_runs, 'run')}: "
                    f"{fmt_seconds(fresh_s)}, its collection and checks included")).judge(),
    ]
    against_plugins = "measure against the faster of flakefinder and repeat, with xdist"
    against_limit = "measure against the physical limit (call phases ÷ workers)"
    if not full:
        return [*rows, *(unavailable(ID, backend, what, "a smoke run's plugin environment")
                         for what in (against_plugins, against_limit))]
    plugin = min(("flakefinder", "repeat"), key=times.get)
    return [
        *rows,
        Row(ID, backend, against_plugins, subject=fmt_seconds(times["measure"]),
            baseline=f"{fmt_seconds(times[plugin])} ({plugin})",
            goal=f"≤ {PLUGIN_MUST:g}{TIMES} (goal: faster than both)",
            ratio=times["measure"] / times[plugin], limit=PLUGIN_MUST,
            detail=(f"flakefinder {fmt_seconds(times['flakefinder'])}, repeat "
                    f"{fmt_seconds(times['repeat'])}")).judge(),
        Row(ID, backend, against_limit, subject=fmt_seconds(times["measure"]),
            baseline=fmt_seconds(limit_s), goal=f"≤ {LIMIT_GOAL}{TIMES} (goal only)",
            ratio=times["measure"] / limit_s, limit=LIMIT_GOAL).judge(),
    ]
