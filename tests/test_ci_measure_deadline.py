"""gate's measure budget holds in real time: the schedule hands out no block of runs once its
deadline has passed (the blocks already running finish; the first always starts), and cuts
the targets left with runs not started; gate names those that got no run as the plan names
what its budget left out, and says which were cut short."""

from __future__ import annotations

import io
import itertools

from tests.ci_client_view import load_client

client = load_client()


class Clock:
    """A clock the test moves."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class Quiet:
    def update(self, target):
        pass

    def finished(self, target):
        target.reported = True


def targets(**runs):
    made = []
    for name, count in runs.items():
        target = client.Target(f"test_t.py::{name}", count, client.SCRIPT_SEED_BASE)
        target.node = target.name
        made.append(target)
    return made


def schedule(chosen, clock, deadline=10.0):
    return client.Schedule(chosen, early=True, max_upper_rate=0.02, progress=Quiet(),
                           session=False, deadline=deadline, clock=clock)


def run_block(plan, block, failed=False):
    for task in plan.take(block, client.RUNS_PER_PROCESS):
        plan.record(task, client.Outcome(failed, 0.001, "", task.index == block.target.done))


def test_no_block_starts_after_the_deadline_and_a_running_one_finishes():
    clock = Clock()
    long, short, last = targets(test_long=250, test_short=50, test_last=10)
    plan = schedule([long, short, last], clock)
    first = plan.next_block()
    assert (first.target, list(first.indices)) == (long, list(range(100)))
    started = plan.take(first, 16)  # its process is fed 16 runs, then the deadline passes
    clock.now = 10.0
    assert plan.next_block() is None
    assert plan.next_birth_block() is None
    # The block already running is fed the rest of its runs.
    rest = plan.take(first, client.RUNS_PER_PROCESS)
    assert [task.index for task in started + rest] == list(range(100))
    for task in started + rest:
        plan.record(task, client.Outcome(False, 0.001, "", False))
    assert plan.cut() == [long, short, last]
    assert (long.cut, long.done, long.runs, long.classification) == (True, 100, 250, "stable")
    assert (short.done, short.classification, last.done) == (0, None, 0)
    assert long.row()["n"] == 100


def test_before_the_deadline_the_blocks_follow_one_another():
    clock = Clock()
    long, short = targets(test_long=250, test_short=50)
    plan = schedule([long, short], clock)
    blocks = []
    while (block := plan.next_block()) is not None:
        clock.now += 3.0  # each block's process takes 3 s: the fourth starts at 9 s
        blocks.append((block.target.name, block.indices[0]))
        run_block(plan, block)
    assert blocks == [(long.name, 0), (long.name, 100), (long.name, 200), (short.name, 0)]
    assert plan.cut() == []
    assert (long.done, short.done, long.cut, short.cut) == (250, 50, False, False)


def test_the_first_block_starts_even_past_the_deadline():
    clock = Clock()
    first, second = targets(test_first=10, test_second=10)
    plan = schedule([first, second], clock)
    clock.now = 11.0
    block = plan.next_block()
    assert block.target is first
    run_block(plan, block)
    assert plan.next_block() is None
    assert plan.cut() == [second]


def test_without_a_deadline_nothing_is_cut():
    clock = Clock()
    (only,) = targets(test_only=150)
    plan = schedule([only], clock, deadline=None)
    clock.now = 1e9
    while (block := plan.next_block()) is not None:
        run_block(plan, block)
    assert plan.cut() == []
    assert only.done == 150


def test_the_new_tests_process_goes_on_to_no_block_after_the_deadline():
    clock = Clock()
    first, second = targets(test_new_a=10, test_new_b=10)
    first.birth = second.birth = True
    plan = schedule([first, second], clock)
    block = plan.next_birth_block()
    run_block(plan, block)
    clock.now = 10.0
    assert plan.next_birth_block(block) is None
    assert plan.cut() == [second]


def measured_plan(*names, budget=60.0):
    candidates = [client.PlanCandidate(f"test_t.py::{name}", 0.01, 10, new=True)
                  for name in names]
    return client.gate_plan(candidates, budget)


def test_gate_names_what_got_no_run_and_what_was_cut_short():
    long, started, unstarted = targets(test_long=250, test_started=10, test_unstarted=10)
    long.cut, long.done, long.fails = True, 100, 0
    started.done = 10
    unstarted.cut = True
    plan = measured_plan("test_long", "test_started", "test_unstarted")
    notes = io.StringIO()
    kept, after = client.budget_cut([long, started, unstarted], plan, notes)
    assert notes.getvalue().splitlines() == [
        "BUDGET: test_t.py::test_long cut short after 100 of 250 runs: the budget of 60 s "
        "ran out",
        "NOT MEASURED (budget) test_t.py::test_unstarted: new; the budget of 60 s ran out "
        "before its runs started",
        "BUDGET: 1 tier-2 node of the plan got no run before the budget of 60 s ran out; "
        "left to the nightly measure with the others: 1 tier-2 node in all",
    ]
    assert kept == [long, started]
    assert [p.node for p in after.measured] == ["test_t.py::test_long", "test_t.py::test_started"]
    assert [p.node for p in after.over_budget] == ["test_t.py::test_unstarted"]
    assert after.left_to_nightly == plan.left_to_nightly + 1
    assert [row["nodeid"] for row in (t.row() for t in kept)] == [long.name, started.name]


def test_measures_line_says_a_target_was_cut():
    cut, empty = targets(test_cut=250, test_empty=10)
    cut.cut, cut.done, cut.classification = True, 100, "stable"
    empty.cut = True
    assert client.result_line(cut).endswith(
        "cut short by the measure budget after 100 of 250 runs")
    assert client.result_line(empty) == (
        "not measured    test_t.py::test_empty: the measure budget ran out before its runs "
        "started")


class Pool:
    """Records the processes a source starts: the index of each one's target task."""

    slots = 8

    def __init__(self):
        self.started = []

    def spawn(self, files, fixed=None, seed=0):
        self.started.append(fixed[-1].index)

    def start(self, files, fixed, seed):  # forked or fresh, a process all the same
        self.spawn(files, fixed, seed)


def measured(name, failed):
    (target,) = targets(**{name: 3})
    target.predecessors = ["test_t.py::test_before"]
    for index in range(3):
        target.record(index, client.Outcome(failed, 0.001, "", index == 0), True, 0.02)
    client.classify_by_outcomes(target)
    return target


def test_past_the_deadline_only_the_suspects_isolation_checks_start():
    suspect, stable = measured("test_suspect", True), measured("test_stable", False)
    assert (suspect.classification, stable.classification) == (None, "stable")
    for over, started in [(False, ["alone", "after", "in_order"]), (True, ["alone", "after"])]:
        pool = Pool()
        checks = client.IsolationChecks([suspect], alone=True, tags=itertools.count(),
                                        in_order=[stable], closed=lambda over=over: over)
        while checks.spawn(pool, 0):
            pass
        assert pool.started == started

