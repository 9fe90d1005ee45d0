"""B6d: gate --measure on a pull request at real size (bench/pr_scenario.py): 500 tier-2
tests in 20 files, run under pytest-xdist (``-n 2``), one of them broken; the pull request
adds two tests (one failing a quarter of its seeds) and edits one file. The board knows the
500 from the base commit; the suite's settings are the defaults (min_runs 200, the measure
budget 300 s).

- ``flakeboard_ci.py gate --measure --diff HEAD~1 --commit PR --upload``: gate's run, the
  plan (the failed test, the two new ones and the edited file's 25 tests), their runs in
  measure's worker pool (one per CPU), and the report uploaded and judged;
- the same command without ``--measure``: gate's plain run and its upload;
- the physical cost of the plan: the plain run's wall time, plus the runs the report counts
  for each measured test times that test's call phase in the plain run, ÷ the workers.

Goals: gate --measure within 1.5 times the physical cost, and under 60 s on this machine.
Both commands run in one fresh virtual environment holding pytest and pytest-xdist at
pinned versions, against the board served by gunicorn (2 sync workers), after one untimed
run of each (it compiles the project), in rounds that alternate them.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from django.db import connections

from . import data
from .b6_measure import CLIENT, client_bench, tools_python
from .b6b_order import timed_run
from .measure import TIMES, Row, fmt_seconds, progress, repeats, routable, scaled, unavailable
from .pr_scenario import CALL_LOG_ENV, FILES, PER_FILE, make_scenario
from .server import Gunicorn

ID = "B6d"
TOOLS = ["pytest==9.2.0", "pytest-xdist==3.8.0", "execnet==2.1.2"]
BASE, PR = "b6d0base", "b6d0pr01"
SUITE = "b6d-pr"
LIMIT_GOAL = 1.5  # gate --measure against the plan's physical cost, at most
WALL_GOAL_S = 60.0  # gate --measure's wall time on the 2-core machine, under
# A smoke run's min_runs: one block a node, above the guard's 30 runs (a flaky new test
# measured at min_runs is judged over_budget, not new_test_flaky).
SMOKE_MIN_RUNS = 40
GAP = ("The physical cost counts the plain run and the measured runs' test bodies only "
       "(about 0.2 s of 5,000 runs of fast tests). gate --measure adds the board's tiers and "
       "targets answers, and measure's processes: one pytest per block of 100 runs (50 for "
       "the edited file's 25 tests by 200 runs), then one per check in CI's order (24 of "
       "those tests have tests before them in their module) and two for the isolation check "
       "of the broken test, each paying an interpreter start, pytest's import and its "
       "file's collection; then the report's upload.")


def make_suite(known: list[str], min_runs: int | None) -> str:
    """The suite, knowing ``known`` from the base commit (a signal upload): every node in
    tier 2 by the default rules, its min_runs the default unless given; a write token of
    it."""
    suite = data.make_suite(SUITE, pin=False)
    if min_runs is not None:
        suite.min_runs = min_runs
        suite.save(update_fields=["min_runs"])
    return data.known_from(suite, known, BASE)


def gate(python: Path, project: Path, url: str, token: str, log: Path,
         *measure: str) -> tuple[float, str]:
    """gate (with ``--measure`` when given) on the pull request: wall seconds, what it said."""
    return timed_run(
        [str(python), str(CLIENT), "gate", *measure, "--diff", "HEAD~1", "--commit", PR,
         "--upload", "-p", "no:cacheprovider"], project,
        FLAKEBOARD_URL=url, FLAKEBOARD_SUITE=SUITE, FLAKEBOARD_TOKEN=token,
        PATCH_SEED="9137", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", **{CALL_LOG_ENV: str(log)})


def measured_runs(said: str, project: Path, planned: set[str]) -> dict[str, int]:
    """The runs of each measured test, from the report; raise unless the plan measured
    exactly ``planned`` and failed the flaky new test."""
    rows = {row["nodeid"]: row["n"]
            for row in json.loads((project / "flake-report.json").read_text())}
    if set(rows) != planned or "new_test_flaky" not in said:
        raise RuntimeError(f"gate --measure did not measure the plan: {sorted(rows)}\n"
                           f"{said[-3000:]}")
    return rows


def call_phases(log: Path) -> dict[str, float]:
    """Each node's call phase in a plain run's log."""
    return {node: float(seconds) for node, seconds in
            (line.split("\t") for line in log.read_text().splitlines())}


def run(scale: float, backend: str, workdir) -> list[Row]:
    workdir, workers, full = client_bench(ID, workdir, scale)
    files, per_file = scaled(scale, FILES, 8), scaled(scale, PER_FILE, 5)
    what = (f"gate --measure on a PR to {files * per_file} tests in {files} files under "
            f"-n 2 (1 failed, 2 new, 1 file of {per_file} edited)")
    if not routable(f"/api/v1/suites/{SUITE}/tiers"):
        return [unavailable(ID, backend, what, "POST /api/v1/suites/{suite}/tiers")]
    # A smoke run's interpreter is the board's own (its pytest-xdist).
    python = tools_python(ID, workdir, TOOLS, full)
    scenario = make_scenario(workdir / f"project-{backend}", files, per_file)  # a git history each
    planned = {scenario.broken, *scenario.new, *scenario.edited}
    token = make_suite(scenario.known, None if full else SMOKE_MIN_RUNS)
    connections.close_all()
    rounds = repeats(scale, 2, least=1)
    times: dict[str, list[float]] = {"plain": [], "measure": []}
    runs: dict[str, int] = {}
    calls: dict[str, float] = {}
    with Gunicorn(workdir / f"gunicorn-{ID}.log") as server:
        server.warm_up(f"/api/v1/suites/{SUITE}/tiers")
        progress(f"{ID}: gate and gate --measure, once each untimed, then {rounds} rounds")
        for rnd in range(rounds + 1):
            for kind in ("plain", "measure") if rnd % 2 == 0 else ("measure", "plain"):
                log = workdir / f"calls-{kind}-{rnd}.log"
                (scenario.root / "flake-report.json").unlink(missing_ok=True)
                seconds, said = gate(python, scenario.root, server.url(""), token, log,
                                     *(["--measure"] if kind == "measure" else []))
                if kind == "measure":
                    runs = measured_runs(said, scenario.root, planned)
                else:
                    calls = call_phases(log)
                if rnd:
                    times[kind].append(seconds)
    plain, measured = (statistics.median(times[kind]) for kind in ("plain", "measure"))
    bodies = sum(n * calls[node] for node, n in runs.items())
    limit_s = plain + bodies / workers
    nightly = len(scenario.known) + len(scenario.new) - len(planned)
    figures = {"tests": len(scenario.known), "measured": len(planned), "nightly": nightly,
               "workers": workers, "runs": sum(runs.values()), "plain_s": times["plain"],
               "measure_s": times["measure"], "bodies_s": round(bodies, 3),
               "limit_s": round(limit_s, 3)}
    detail = (f"{len(planned)} tests measured ({sum(runs.values())} runs), {nightly} left to "
              f"the nightly measure; the plain run {fmt_seconds(plain)}, the measured runs' "
              f"call phases {fmt_seconds(bodies)} ÷ {workers} workers")
    return [
        Row(ID, backend, what, subject=fmt_seconds(measured),
            baseline=f"{fmt_seconds(limit_s)} (physical cost)",
            goal=f"≤ {LIMIT_GOAL:g}{TIMES} the physical cost", ratio=measured / limit_s,
            limit=LIMIT_GOAL, detail=detail, figures=figures).judge(),
        Row(ID, backend, f"{what}: wall time", subject=fmt_seconds(measured),
            goal=f"< {WALL_GOAL_S:g} s", ratio=measured / WALL_GOAL_S, limit=1.0,
            detail=f"on {workers} CPUs", figures={"measure_s": times["measure"]}).judge(),
    ]
