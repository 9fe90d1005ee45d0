"""What a patch's gate measures (SPEC 2.4c): the gate's evidence grows with the patch, not
the suite. Of the selected tier-2 nodes, ``gate --measure`` measures, in this priority
order, those that failed in this run (measuring tells a flaky node from a broken one), the
new ones (the guard of 2.4b), those in a test file the diff changed, and the suite's
flaky-prone ones (its targets: marked, or flaky in the last 30 days), and, where the suite's
impact map (which source files each test executed, recorded on its default branch) is
known, those that execute a changed source file; and it measures them within the suite's
measure budget. Every other tier-2 node ran once in the gate's run: its
standing evidence is the ledger and the nightly measure.

The plan estimates each node's cost as its runs times its time in the gate's run plus the
pool's own cost of a run (RUN_OVERHEAD_SECONDS), and starts the nodes in priority order
while the spent time is under the budget: the measured nodes are always a prefix of the
priority order, and they exceed the budget by at most the last one's cost. The first node
that does not start, and every one after it, is left out for the budget, named with its
group.

The CI client's build takes this module as it is (client/build.py's SHARED_RULES): keep it
standard library only and Python 3.8."""

from __future__ import annotations

import typing

# The groups in priority order, and what each measured line says of its node. EVERY_NODE is
# the group of the nodes in none of them, measured only when the gate is asked to measure
# every selected tier-2 node (``--measure all``).
GATE_PLAN_GROUPS = ("failed", "new", "changed_file", "flaky", "executes_changed")
EVERY_NODE = "tier_2"
MEASURED_BECAUSE = {
    "failed": "failed in this run",
    "new": "new",
    "changed_file": "test file changed",
    "flaky": "flaky in the last 30 days",
    "executes_changed": "runs a changed file",
    EVERY_NODE: "tier 2 (--measure all)",
}
# A suite's measure budget in seconds, unless its settings say otherwise, and its bounds
# (a day at most).
MEASURE_BUDGET_SECONDS = 300
MEASURE_BUDGET_MIN_SECONDS = 1
MEASURE_BUDGET_MAX_SECONDS = 86_400
# What one run costs beyond the test's own time: the pool sends it, a worker runs pytest's
# phases and reports back (about 10 ms a run on a 2-core machine, the processes' start-ups
# included, for a test of 1 ms).
RUN_OVERHEAD_SECONDS = 0.01


class PlanCandidate(typing.NamedTuple):
    """A selected tier-2 node that ran, with the facts that place it in a group, its time
    in the gate's run (seconds) and the runs it would get (the patch class's factor times
    min_runs; a new node, the guard's)."""

    node: str
    seconds: float
    runs: int
    failed: bool = False
    new: bool = False
    changed_file: bool = False
    flaky: bool = False
    # The changed source file the node executes, by the suite's impact map; "" for none.
    executes_changed: str = ""


class PlannedNode(typing.NamedTuple):
    """A node of the plan: its group, runs and estimated cost in seconds of wall time, and
    the changed source file it executes (its group executes_changed; "" otherwise)."""

    node: str
    group: str
    runs: int
    cost: float
    path: str = ""

    @property
    def why(self) -> str:
        if self.group == "executes_changed" and self.path:
            return f"runs the changed {self.path}"
        return MEASURED_BECAUSE[self.group]


class GatePlan(typing.NamedTuple):
    """What the gate measures (in priority order), what the budget left out (in the same
    order), and how many selected tier-2 nodes were not measured at all: those in no
    group and those left out for the budget, left to the nightly measure."""

    measured: tuple[PlannedNode, ...]
    over_budget: tuple[PlannedNode, ...]
    left_to_nightly: int
    budget: float | None

    @property
    def cost(self) -> float:
        return sum(planned.cost for planned in self.measured)

    @property
    def cut_groups(self) -> tuple[str, ...]:
        """The groups the budget cut short or left out, in priority order."""
        return tuple(dict.fromkeys(planned.group for planned in self.over_budget))


def plan_group(candidate: PlanCandidate) -> str | None:
    """The first group a node belongs to, in priority order; None for none."""
    facts = {"failed": candidate.failed, "new": candidate.new,
             "changed_file": candidate.changed_file, "flaky": candidate.flaky,
             "executes_changed": bool(candidate.executes_changed)}
    return next((name for name in GATE_PLAN_GROUPS if facts[name]), None)


def in_changed_file(nodeid: str, changed_paths) -> bool:
    """Whether a node id's file is one of the diff's changed paths: the same path, or one
    ending in it where git's root lies above pytest's (``pkg/tests/test_x.py`` and
    ``tests/test_x.py``), either way."""
    path = nodeid.split("::", 1)[0]
    return any(path == changed or changed.endswith("/" + path) or path.endswith("/" + changed)
               for changed in changed_paths)


def gate_plan(candidates, budget: float | None, every_node: bool = False,
              workers: int = 1) -> GatePlan:
    """The plan for ``candidates`` (the selected tier-2 nodes that ran, in the run's
    order): the grouped ones in priority order (the run's order within a group), started
    while the spent cost is under ``budget`` seconds of wall time (None: no budget). A
    node's cost is its runs' time shared by the ``workers`` that run its blocks side by
    side. With ``every_node`` the nodes in no group are planned too, last."""
    ranked = []
    for index, candidate in enumerate(candidates):
        group = plan_group(candidate) or (EVERY_NODE if every_node else None)
        if group is not None:
            rank = GATE_PLAN_GROUPS.index(group) if group in GATE_PLAN_GROUPS else len(
                GATE_PLAN_GROUPS)
            cost = (max(0.0, float(candidate.seconds or 0.0)) + RUN_OVERHEAD_SECONDS) * \
                candidate.runs / max(1, workers)
            path = candidate.executes_changed if group == "executes_changed" else ""
            ranked.append((rank, index, PlannedNode(candidate.node, group, candidate.runs,
                                                    cost, path)))
    ranked.sort(key=lambda item: item[:2])
    measured: list[PlannedNode] = []
    over: list[PlannedNode] = []
    spent = 0.0
    for _, _, planned in ranked:
        if not over and (budget is None or spent < budget):
            measured.append(planned)
            spent += planned.cost
        else:
            over.append(planned)
    return GatePlan(tuple(measured), tuple(over), len(candidates) - len(measured), budget)
