"""measure's schedule: which target's runs a process runs next, block by block, and the
count of their outcomes; with a deadline (gate's measure budget), no block starts once it
has passed, and the targets left with runs not started are cut there."""

from __future__ import annotations

import collections
import itertools
import time

from .measure_runs import Task, classify_by_outcomes
from .outputs import node_file


class Block:
    """Runs of one target that one process runs, in index order, and nothing else: what a
    run sees in its process (the target's own runs before it in the block, no other
    target's) is the same whatever the worker count and whichever worker ran it."""

    def __init__(self, target, indices):
        self.target, self.indices = target, collections.deque(indices)

    def waiting(self):
        if self.target.finished:
            return 0
        return sum(index not in self.target.outcomes for index in self.indices)


class Schedule:
    """Hands out the targets' runs, block by block in index order, and counts their
    outcomes. With a ``deadline`` (a time of ``clock``, seconds), no block is handed out
    once it has passed, but the first (as the plan's first node always starts): the blocks
    already running finish, and ``cut`` marks the targets left with runs not started."""

    def __init__(self, targets, *, early, max_upper_rate, progress, session, deadline=None,
                 clock=time.monotonic):
        self.targets, self.early, self.max_upper_rate = targets, early, max_upper_rate
        self.session = session  # every target waits for its check in the session's order
        self.progress = progress
        self.deadline, self.clock = deadline, clock
        self.handed = False  # whether a block was handed out
        self.tags = itertools.count()
        self.blocks = collections.deque(Block(target, indices) for target in targets
                                        for indices in target.layout())

    def over(self):
        """Whether the deadline has passed (never, without one)."""
        return self.deadline is not None and self.clock() >= self.deadline

    def closed(self):
        """Whether no further block may start: one has, and the deadline has passed."""
        return self.handed and self.over()

    def cut(self):
        """After the runs: the targets the deadline left with runs not started, each marked
        cut (it counts the runs it has) and, when it has some, classified by them as a
        finished one is; the others are not measured."""
        if self.deadline is None:
            return []
        cut = [target for target in self.targets if not target.finished]
        for target in cut:
            target.cut = True
            if target.done and target.classification is None:
                classify_by_outcomes(target)
        return cut

    def next_block(self):
        """The next block to start a process for, or None: the layout's blocks in order,
        then the runs a stopped process handed back, as a block of their own; None once
        the deadline has passed."""
        if self.closed():
            return None
        while self.blocks:
            block = self.blocks.popleft()
            if block.waiting():
                return self.hand(block)
        for target in self.targets:
            indices = target.take_returned()
            if indices:
                return self.hand(Block(target, indices))
        return None

    def hand(self, block):
        self.handed = True
        return block

    def next_birth_block(self, block=None):
        """For the process that ran ``block`` of a new test, the next block of a new test
        of the same file (without ``block``, of any file), or None: fast new tests would
        otherwise each pay a process start and a collection for a few milliseconds of
        runs. None once the deadline has passed: the next block would start there."""
        if self.closed() or (block is not None and not block.target.birth):
            return None
        file = None if block is None else node_file(block.target.name)
        for following in self.blocks:
            if (following.target.birth and following.waiting()
                    and file in (None, node_file(following.target.name))):
                self.blocks.remove(following)
                return self.hand(following)
        return None

    def take(self, block, count):
        """Up to ``count`` of the block's runs, in order, as tasks."""
        target, tasks = block.target, []
        while block.indices and len(tasks) < count and not target.finished:
            index = block.indices.popleft()
            if index not in target.outcomes:
                tasks.append(Task(next(self.tags), target.node, target.seed_base + index,
                                  target, index))
        if tasks and target.started is None:
            target.started = time.monotonic()
        return tasks

    def take_one(self):
        """One run, for a process of its own (--fresh); None when none is waiting."""
        block = self.next_block()
        if block is None:
            return None
        task = self.take(block, 1)[0]
        if block.waiting():
            self.blocks.appendleft(block)
        return task

    def record(self, task, outcome):
        """Count a run; True when it finished its target."""
        target = task.target
        finished = target.record(task.index, outcome, self.early, self.max_upper_rate)
        self.progress.update(target)
        if finished and target.classification is None:
            classify_by_outcomes(target)
        # A target with tests before it waits for its check in CI's order.
        if (finished and target.classification and not target.reported
                and not (self.session or target.predecessors)):
            self.progress.finished(target)
        return finished
