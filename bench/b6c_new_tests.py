"""B6c: the new-test guard's added time, on a generated project of 70 fast tests (about 3 ms
each): 50 the board knows (uploaded once at a base commit, tier 1 as gate's run-once tests)
and 20 a pull request adds, each new at its commit and in tier 2:

- ``flakeboard_ci.py gate --measure --commit PR --upload``: gate's one run, the board's tiers
  answer (20 nodes new), then the guard's 30 runs of each new test in measure's worker pool
  (one per CPU; the new tests of a file share its processes), and the report uploaded and
  judged;
- the same command, the same project and the same board, on a suite whose tier rules put
  every test in tier 1: the tiers answer leaves nothing to measure, and no report is made;
- the physical limit: the guard's runs (20 by 30) times a new test's mean call phase, timed
  where it runs, ÷ the workers.

The guard's added time is the first's median less the second's, over rounds that alternate
them, each timed from its verdict's answer (printed before the board is asked for the tiers)
to its end: gate's own run, the same in both and the noisiest part on a busy machine, is
left out of both. Both run in one fresh virtual environment holding pytest at its pinned version,
against the board served by gunicorn (2 sync workers), after one untimed run of the second
(it compiles the project). The processes that ran a new test are counted from the call
phases' log.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import time
from pathlib import Path

from django.db import connections

from flakeboard.rules import plural
from ledger.tiers import tier_rule_add

from . import data
from .b6_measure import CLIENT, client_bench, tools_python
from .call_log import write_calls
from .measure import TIMES, Row, fmt_seconds, progress, repeats, routable, scaled, unavailable
from .server import Gunicorn

ID = "B6c"
TOOLS = ["pytest==9.2.0"]
EXISTING, NEW = 50, 20
GUARD_RUNS = 30  # the guard's runs of a fast new test (NEW_TEST_RUNS, the suite's default)
BODY_S = 0.003  # each test's body: a few milliseconds
BASE, PR = "b6c0base", "b6c0pr20"
GUARDED, UNGUARDED = "b6c-guarded", "b6c-unguarded"
LIMIT_GOAL = 1.3  # the guard's added time against the physical limit, at most
GAP = ("The limit counts only the guarded runs' test bodies, about a second. The guard "
       "adds measure's processes to it: one pytest per worker, each paying an interpreter "
       "start, pytest's import and a collection (a few tenths of a second) before its first "
       "run, and then the report's upload. The new tests of a file share those processes, "
       "and gate's own run was their check in order; with a process per new test and a "
       "check each, the same run took 8.7 times the limit.")

TEST = '''
def test_{name}():
    start = time.perf_counter()
    time.sleep({body})
    assert int(os.environ.get("PATCH_SEED", "0")) >= 0
    calls.log("{node}", time.perf_counter() - start)
'''
def module_source(path: str, names: list[str]) -> str:
    return "import os\nimport time\n\nimport calls\n\n" + "\n".join(
        TEST.format(name=name, body=BODY_S, node=f"{path}::test_{name}") for name in names)


def make_project(root: Path, existing: int, new: int) -> tuple[Path, list[str], list[str]]:
    """The project, the node ids the board knows and those the pull request adds."""
    tests = root / "tests"
    tests.mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\npythonpath = .\n")  # calls.py imports
    write_calls(root, "B6C_CALL_LOG")
    old = [f"old_{i}" for i in range(existing)]
    added = [f"new_{i}" for i in range(new)]
    (tests / "test_old.py").write_text(module_source("tests/test_old.py", old))
    (tests / "test_pr.py").write_text(module_source("tests/test_pr.py", added))
    return (root, [f"tests/test_old.py::test_{n}" for n in old],
            [f"tests/test_pr.py::test_{n}" for n in added])


def make_suite(slug: str, tier_one: str, known: list[str]) -> str:
    """A suite whose rule puts ``tier_one`` in tier 1, knowing ``known`` from the base
    commit (a signal upload); a write token of it."""
    suite = data.make_suite(slug, pin=False)
    tier_rule_add(suite=suite, glob=tier_one, tier=1, actor="bench")
    return data.known_from(suite, known, BASE)


def gate(python: Path, project: Path, url: str, suite: str, token: str,
         log: Path) -> tuple[float, str]:
    """``gate --measure --commit PR --upload`` in the project: the seconds from its verdict's
    answer to its end (after tiers), and what it said."""
    return after_the_verdict(
        [str(python), str(CLIENT), "gate", "--measure", "--commit", PR, "--upload",
         "-q", "-p", "no:cacheprovider"], project,
        FLAKEBOARD_URL=url, FLAKEBOARD_SUITE=suite, FLAKEBOARD_TOKEN=token,
        PATCH_SEED="9137", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", B6C_CALL_LOG=str(log))


def after_the_verdict(command: list[str], cwd: Path, **env) -> tuple[float, str]:
    """Run gate with its output unbuffered, both streams in one pipe, each line stamped as it
    arrives: the seconds from the last line before its first ``MEASURE`` line (its verdict's
    answer, printed before it asks the board for the tiers) to its end, and what it said."""
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("DJANGO_SETTINGS_MODULE", "PYTHONPATH")}
    environment.update(PYTHONHASHSEED="0", TERM="dumb", PYTHONUNBUFFERED="1", **env)
    lines, anchor = [], None
    with subprocess.Popen(command, cwd=cwd, env=environment, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True) as proc:
        said_at = time.perf_counter()
        for line in proc.stdout:
            if anchor is None and line.startswith("MEASURE"):
                anchor = said_at
            said_at = time.perf_counter()
            lines.append(line)
    end = time.perf_counter()
    said = "".join(lines)
    if anchor is None:
        raise RuntimeError(f"gate said no MEASURE line:\n{said[-3000:]}")
    return end - anchor, said


def guarded_runs(said: str, project: Path, new: list[str]) -> int:
    """The guard's runs, from its report; raise unless it measured every new test clean."""
    if f"NEW {len(new)} tier-2 node{'s' * (len(new) != 1)} new at" not in said:
        raise RuntimeError(f"the guard did not find the {len(new)} new tests:\n{said[-3000:]}")
    rows = {row["nodeid"]: row for row in json.loads((project / "flake-report.json").read_text())}
    if sorted(rows) != sorted(new) or any(row["fails"] for row in rows.values()):
        raise RuntimeError(f"the guard's report is not the new tests' clean runs: {rows}")
    return sum(row["n"] for row in rows.values())


def call_phases(log: Path, nodes: list[str]) -> list[tuple[str, float]]:
    """The logged call phases of ``nodes``: the process that ran each, and its seconds."""
    wanted = set(nodes)
    return [(pid, float(seconds)) for pid, node, seconds in
            (line.split("\t") for line in log.read_text().splitlines())
            if node in wanted]


def run(scale: float, backend: str, workdir) -> list[Row]:
    workdir, workers, full = client_bench(ID, workdir, scale)
    # 20 new of 70 is under the guard's share (30%): every new test is measured.
    existing, new_count = scaled(scale, EXISTING, 5), scaled(scale, NEW, 2)
    what = (f"the guard's added time, a PR adding {new_count} fast tests to {existing} "
            f"against the limit ({new_count} {TIMES} {GUARD_RUNS} runs ÷ {workers} workers)")
    if not routable(f"/api/v1/suites/{GUARDED}/tiers"):
        return [unavailable(ID, backend, what, "POST /api/v1/suites/{suite}/tiers")]
    # gate runs with PYTEST_DISABLE_PLUGIN_AUTOLOAD, as CI's tests do.
    python = tools_python(ID, workdir, TOOLS, full)
    # The project (a git history) is each backend's own.
    project, old, new = make_project(workdir / f"project-{backend}", existing, new_count)
    tokens = {GUARDED: make_suite(GUARDED, "tests/test_old.py::*", old),
              UNGUARDED: make_suite(UNGUARDED, "*", old + new)}
    connections.close_all()
    rounds = repeats(scale, 2)
    times: dict[str, list[float]] = {GUARDED: [], UNGUARDED: []}
    runs, calls, processes = [], [], []
    with Gunicorn(workdir / f"gunicorn-{ID}.log") as server:
        server.warm_up(f"/api/v1/suites/{GUARDED}/tiers")
        progress(f"{ID}: gate --measure, {plural(new_count, 'new test')}: once untimed "
                 f"without the guard, then {rounds} rounds with and without it")
        for rnd in range(rounds + 1):
            order = (UNGUARDED, GUARDED) if rnd % 2 else (GUARDED, UNGUARDED)
            for suite in order if rnd else (UNGUARDED,):  # the first compiles and warms up
                log = workdir / f"calls-{suite}-{rnd}.log"
                (project / "flake-report.json").unlink(missing_ok=True)  # each run's own
                seconds, said = gate(python, project, server.url(""), suite, tokens[suite],
                                     log)
                if suite == UNGUARDED and "no tier-2 node was selected" not in said:
                    raise RuntimeError(f"gate measured without new tests:\n{said[-3000:]}")
                if suite == GUARDED:
                    runs.append(guarded_runs(said, project, new))
                    logged = call_phases(log, new)
                    calls += [call for _, call in logged]
                    processes.append(len({pid for pid, _ in logged}))
                if rnd:
                    times[suite].append(seconds)
    guarded, unguarded = (statistics.median(times[s]) for s in (GUARDED, UNGUARDED))
    added = guarded - unguarded
    call_s = statistics.fmean(calls)
    limit_s = runs[-1] * call_s / workers
    return [Row(
        ID, backend, what, subject=fmt_seconds(added),
        baseline=f"{fmt_seconds(limit_s)} (limit)",
        goal=f"≤ {LIMIT_GOAL:g}{TIMES} the limit", ratio=added / limit_s, limit=LIMIT_GOAL,
        detail=(f"gate --measure from its verdict's answer to its end: {fmt_seconds(guarded)} "
                f"with the guard's {runs[-1]} runs, {fmt_seconds(unguarded)} with nothing to "
                f"measure; {max(processes)} pytest processes ran a new test (gate's run "
                f"included); a new test's call phase "
                f"{1000 * call_s:.1f} ms"),
        figures={"existing": existing, "new": new_count, "workers": workers,
                 "guarded_runs": runs, "processes": processes, "guarded_s": times[GUARDED],
                 "unguarded_s": times[UNGUARDED], "added_s": round(added, 3),
                 "call_phase_s": round(call_s, 5), "limit_s": round(limit_s, 3)},
    ).judge()]

