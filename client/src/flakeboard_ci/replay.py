"""The replay command: a flaky test's run again, as measure ran it (SPEC 2.4d). At one seed,
a fresh pytest that seeds ``random`` (and numpy) from PATCH_SEED as measure's runs are
seeded, with pytest's own output and exit code: a seeded test fails again every time at its
failing seed. With --runs, a block of runs in one process, as measure runs them; with
--stress, under CPU load, a busy process per core, as the diagnosis's timing experiment."""

from __future__ import annotations

import os
import subprocess
import sys

from .core import UsageError
from .measure_experiments import Stress
from .measure_pool import Pool
from .measure_procs import OWN_SEEDS, plugin_pytest
from .measure_progress import Progress
from .measure_runs import Target
from .measure_schedule import Schedule
from .measure_sources import BlockRuns
from .measure_workspace import Workspace
from .outputs import node_file

ONE_RUN = ["--flakeboard-seeded", *OWN_SEEDS, "-p", "no:cacheprovider"]


def cmd_replay(board, args):
    if args.runs < 1:
        raise UsageError(f"--runs must be at least 1 (got {args.runs})")
    if not os.path.exists(node_file(args.node)):
        raise UsageError(f"{args.node} collects nothing: there is no {node_file(args.node)}")
    load = " under CPU load" if args.stress else ""
    if args.runs == 1:
        print(f"flakeboard: replaying {args.node} with PATCH_SEED={args.seed}{load}",
              file=sys.stderr, flush=True)
        if not args.stress:
            return one_run(args.node, args.seed)
        with Stress():
            return one_run(args.node, args.seed)
    last = args.seed + args.runs - 1
    print(f"flakeboard: replaying {args.node} {args.runs} times in one process, PATCH_SEED "
          f"{args.seed} to {last}{load}", file=sys.stderr, flush=True)
    target = runs_in_a_process(args.node, args.runs, args.seed, args.stress)
    failed = [str(args.seed + i) for i in range(target.done) if target.outcomes[i].failed]
    print(f"REPLAY {args.node}: {len(failed)}/{target.done} failed{load}" + (
        f" (PATCH_SEED {', '.join(failed[:10])}{', ...' if len(failed) > 10 else ''})"
        if failed else ""))
    if target.unmeasured:
        raise UsageError(target.unmeasured)
    return 1 if failed else 0


def one_run(node, seed):
    """One run of ``node`` in a fresh pytest at ``seed``: pytest's output, and its exit code
    (0 passed, 1 failed)."""
    command, env = plugin_pytest(sys.executable, [*ONE_RUN, node],
                                 dict(os.environ, PYTHONHASHSEED="0", PATCH_SEED=str(seed)))
    return subprocess.call(command, env=env)


def runs_in_a_process(node, runs, seed, stress):
    """``runs`` runs of ``node`` from ``seed`` on, in one pytest process as measure runs a
    block of them (no early stop), under load with ``stress``: the target with their
    outcomes."""
    target = Target(node, runs, seed)
    target.reported = True
    progress = Progress(sys.stderr)
    workspace = Workspace()
    pool = Pool(python=sys.executable, folder=workspace.folder, slots=1, timeout=None,
                progress=progress, plugin=workspace)
    try:
        schedule = Schedule([target], early=False, max_upper_rate=1.0, progress=progress,
                            session=False)
        if stress:
            with Stress():
                pool.run(BlockRuns(schedule, [node_file(node)]))
        else:
            pool.run(BlockRuns(schedule, [node_file(node)]))
    finally:
        pool.close()
        workspace.discard()
        progress.close()
    return target
