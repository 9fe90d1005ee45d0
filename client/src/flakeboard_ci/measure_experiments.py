"""The diagnosis's experiments (SPEC 2.4d, docs/diagnosis.md): for each target measured
flaky, its failing seeds replayed in new processes beside as many passing seeds (seeded:
it fails on its random input), and for one that is not seeded, a block of its runs under CPU
load (timing: it waits on time, not on a condition). Each asks the pool for runs and leaves
its evidence on the target, in the shape the board takes (``target.experiments``)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time

from .measure_runs import Target, Task
from .measure_schedule import Schedule
from .measure_sources import BlockRuns, Source
from .stats import fisher_greater

REPLAY_SEEDS = 3  # failing seeds replayed, at most, each beside a passing one
REPLAYS = 2  # times each seed is replayed, each in a process that has run nothing
LOAD_RUNS = 100  # runs under load, at most: as many as the target's own, up to this
TIMING_P = 0.01  # the load's rate is above the idle one when Fisher's p is below this
DIAGNOSE_BUDGET = 60.0  # seconds a target's experiments may start within (--diagnose-budget)
BUSY = "while True: pass"


def diagnosable(target):
    """Whether the target's runs call for a diagnosis's experiments: measured flaky, its
    runs both failed and passed. An order-dependent or repeat-unsafe one has its evidence
    from the isolation checks already; a broken one is not flaky."""
    return (target.classification == "flaky" and target.unmeasured is None
            and 0 < target.fails < target.done)


def client_command(*arguments):
    """The command line that runs this client with ``arguments``, as a person types it
    where measure runs: the file's path from here when it is below, else in full."""
    path = os.path.abspath(sys.argv[0] if sys.argv[0].endswith(".py") else __file__)
    shown = os.path.relpath(path) if path.startswith(os.getcwd() + os.sep) else path
    return " ".join(shlex.quote(str(part)) for part in ("python3", shown, *arguments))


def replay_command(target, seed):
    return client_command("replay", target.name, "--seed", seed)


def load_command(target, runs):
    return client_command("replay", target.name, "--stress", "--runs", runs,
                          "--seed", target.seed_base)


class Budgets:
    """Each target's --diagnose-budget: its experiments start no process once the seconds
    have passed since its first began (none with 0); a target cut so says ``skipped:
    budget``."""

    def __init__(self, seconds, clock=time.monotonic):
        self.seconds, self.clock, self.began = seconds, clock, {}

    def open(self, target):
        began = self.began.setdefault(target.name, self.clock())
        if self.seconds > 0 and self.clock() - began <= self.seconds:
            return True
        target.experiments["skipped"] = "budget"
        return False


class SeedReplays(Source):
    """The failing seeds of each target, and as many passing ones as controls, each run
    REPLAYS times in a process of its own that has run nothing: a child of the process
    that collected the targets (a pristine fork, as each block of runs is), else a fresh
    one that collects the target alone, as replay runs it.
    The replays go in rounds, each seed once a round: a round that already shows a failing
    seed passing or a control failing decides it is not seeded, and the next is not run."""

    def __init__(self, targets, tags, budgets):
        self.budgets, self.tags, self.pending, self.counts = budgets, tags, [], {}
        self.rounds, self.waiting = {}, {}
        for target in targets:
            failed = [target.seed_base + i for i in range(target.done)
                      if target.outcomes[i].failed][:REPLAY_SEEDS]
            passed = [target.seed_base + i for i in range(target.done)
                      if not target.outcomes[i].failed][:len(failed)]
            self.counts[target.name] = {
                "seeds": failed, "controls": passed, "seed_runs": 0, "seed_fails": 0,
                "control_runs": 0, "control_fails": 0,
                "command": replay_command(target, failed[0])}
            self.rounds[target.name] = 0
            self._round(target)

    def _round(self, target):
        """Queue the target's next round of replays, if it has one left."""
        if self.rounds[target.name] == REPLAYS:
            return
        self.rounds[target.name] += 1
        counts = self.counts[target.name]
        tasks = [Task(next(self.tags), target.node, seed, target, kind)
                 for kind, seeds in (("seed", counts["seeds"]), ("control", counts["controls"]))
                 for seed in seeds]
        self.waiting[target.name] = len(tasks)
        self.pending.extend(tasks)

    def spawn(self, pool, live):
        while live < pool.slots and self.pending:
            task = self.pending.pop(0)
            if self.budgets.open(task.target):
                pool.start(task.target.files_of([]), [task], task.seed)
                return True
        return False

    def result(self, task, outcome):
        target = task.target
        counts = self.counts[target.name]
        counts[f"{task.index}_runs"] += 1
        counts[f"{task.index}_fails"] += outcome.failed
        self.waiting[target.name] -= 1
        if not self.waiting[target.name] and still_seeded(counts):
            self._round(target)
        return False

    def evidence(self, target):
        """The replays' counts, on the target: None when none ran."""
        counts = self.counts[target.name]
        if counts["seed_runs"] + counts["control_runs"]:
            target.experiments["seeded"] = counts
        return target.experiments.get("seeded")


def still_seeded(counts):
    """Whether the replays so far are all a seeded target's: each at a failing seed failed,
    each at a passing seed passed."""
    return (counts["seed_fails"] == counts["seed_runs"] and counts["control_fails"] == 0)


def seeded(counts):
    """Whether the replays show a seeded target: every replay at a failing seed failed and
    every one at a passing seed passed (rules.diagnosis, the board's)."""
    return bool(counts and counts["seed_runs"] and counts["control_runs"]
                and still_seeded(counts))


class Stress:
    """CPU load while it is open: a busy process per core, started and stopped here."""

    def __init__(self, cores=None):
        self.cores = cores or os.cpu_count() or 1
        self.processes = []

    def __enter__(self):
        for _ in range(self.cores):
            self.processes.append(subprocess.Popen(
                [sys.executable, "-c", BUSY], stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        return self

    def __exit__(self, *exc):
        for process in self.processes:
            process.kill()
        for process in self.processes:
            process.wait()
        self.processes = []


def under_load(target):
    """A target of the block under load: the same node and seeds as the target's own first
    runs, as many as those (up to LOAD_RUNS), all run (no early stop), never reported."""
    shadow = Target(target.name, min(target.done, LOAD_RUNS), target.seed_base)
    shadow.node, shadow.rootdir = target.node, target.rootdir
    shadow.reported = True
    return shadow


class Unsaid:
    """The progress of the block under load: its runs are the experiment's, not the
    measurement's, and neither counted nor reported."""

    def update(self, target):
        pass

    def finished(self, target):
        pass


def run_under_load(pool, targets, budgets, max_upper_rate):
    """A block of each target's runs under CPU load, in a process as its own runs had; the
    counts of both, on the target."""
    chosen = [target for target in targets if budgets.open(target)]
    if not chosen:
        return
    pairs = [(target, under_load(target)) for target in chosen]
    schedule = Schedule([shadow for _, shadow in pairs], early=False,
                        max_upper_rate=max_upper_rate, progress=Unsaid(), session=False)
    with Stress():
        pool.run(BlockRuns(schedule))
    for target, shadow in pairs:
        target.experiments["load"] = {
            "idle_n": target.done, "idle_fails": target.fails,
            "load_n": shadow.done, "load_fails": shadow.fails,
            "command": load_command(target, shadow.runs)}


def timing(counts):
    """Fisher's one-sided p of the load's rate above the idle one, and whether it is below
    TIMING_P (rules.diagnosis, the board's)."""
    p = fisher_greater(counts["load_fails"], counts["load_n"],
                       counts["idle_fails"], counts["idle_n"])
    return p, p < TIMING_P


def diagnose(pool, targets, tags, args, max_upper_rate):
    """Run the experiments for the targets measured flaky: the seeds replayed, then, for
    those not seeded, the block under load; a line each says what they found."""
    progress = pool.progress
    chosen = [target for target in targets if diagnosable(target)]
    for target in chosen:
        target.experiments = {}
        if not args.diagnose:
            target.experiments["skipped"] = "disabled"
    if not args.diagnose or not chosen:
        return
    budgets = Budgets(args.diagnose_budget)
    replays = SeedReplays(chosen, tags, budgets)
    pool.run(replays)
    loaded = [target for target in chosen if not seeded(replays.evidence(target))]
    run_under_load(pool, loaded, budgets, max_upper_rate)
    for target in chosen:
        progress.note(diagnosis_line(target))


def diagnosis_line(target):
    """What the experiments found for a target, with their numbers and the reproduction."""
    found = target.experiments
    replays, load = found.get("seeded"), found.get("load")
    parts = []
    if replays:
        parts.append(
            f"failing seeds {', '.join(map(str, replays['seeds']))} failed "
            f"{replays['seed_fails']}/{replays['seed_runs']} replays in new processes, "
            f"passing seeds {replays['control_runs'] - replays['control_fails']}/"
            f"{replays['control_runs']} passed")
    if load:
        p, _ = timing(load)
        parts.append(f"{load['idle_fails']}/{load['idle_n']} failed idle, "
                     f"{load['load_fails']}/{load['load_n']} under CPU load "
                     f"(Fisher's exact p={p:.4f})")
    if seeded(replays):
        verdict, command = "seeded (it fails on its random input)", replays["command"]
    elif load and timing(load)[1]:
        verdict, command = "timing (it fails more under load)", load["command"]
    else:
        verdict, command = "neither seeded nor timing", ""
    if found.get("skipped") == "budget":
        parts.append("the diagnose budget ran out")
    line = f"DIAGNOSIS {target.name}: {verdict}"
    line += f": {'; '.join(parts)}" if parts else ""
    return line + (f"; reproduce: {command}" if command else "")
