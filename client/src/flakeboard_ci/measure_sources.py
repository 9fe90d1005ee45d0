"""What measure's pool runs: the sources of its processes (the collection, the blocks of runs,
a process per run), each started fresh or forked from a collected parent."""

from __future__ import annotations

import os
import time

from .measure_runs import adopt_collection
from .outputs import node_file


class Source:
    """What a pool runs: which processes to start, what to send them, where results go."""

    def spawn(self, pool, live):
        """Start a process with ``pool.spawn`` if one is due (``live`` are running): True
        when it did."""
        return False

    def hello(self, worker, hello):
        pass

    def feed(self, worker, count):
        return []

    def waiting(self, worker):
        """How many runs are still to be sent to the fed ``worker``."""
        return 0

    def result(self, task, outcome):
        return False

    def lost(self, task):
        pass

    def unheard(self, worker, why):
        """A fed process ended before it said hello; True when the source can do without
        it, else measuring stops with ``why``."""
        return False

    def ended(self, worker, code):
        """The process is gone (``code``: its exit code, None when it was stopped); what
        was sent it is answered or handed back already."""


class Collection(Source):
    """One process that collects the targets' files and runs nothing: the check that every
    target names one test, before a process per run is started."""

    def __init__(self, targets, files):
        self.targets, self.files, self.started = targets, files, False

    def spawn(self, pool, live):
        if self.started:
            return False
        self.started = True
        pool.spawn(self.files, fixed=[])
        return True

    def hello(self, worker, hello):
        adopt_collection(self.targets, hello, os.getcwd())


class BlockRuns(Source):
    """A process per block of a target's runs (the schedule's layout) that runs that target
    alone, so no target's state reaches another's runs and the answer does not depend on
    the worker count. New tests measured at birth are the exception: a process goes on from
    one's block to the next of its file, as they ran one after the other in gate's own run.

    With ``files``, the first process collects them all and runs nothing (a zygote): each
    block's process is a child it forks, which starts from the same untouched collected
    state. Where it cannot fork (no fork here, or threads started by the collection), it is
    fed as any process (new tests' runs), and each block starts a fresh process that
    collects the target's file, as without ``files``."""

    def __init__(self, schedule, files=None):
        self.schedule, self.blocks = schedule, {}
        self.collection = Collection(schedule.targets, files) if files else None

    def spawn(self, pool, live):
        if self.collection is not None and not self.collection.started:
            self.collection.started = True
            pool.spawn(self.collection.files, zygote=True)
            return True
        if self.collection is not None or live >= pool.slots:
            return False  # the blocks wait for its hello: forked, or fresh processes
        block = self.schedule.next_block()
        if block is None:
            return False
        if pool.zygote is not None:
            worker = pool.fork()
        else:
            worker = pool.spawn([node_file(block.target.name)])
        self.blocks[worker.ident] = block
        return True

    def hello(self, worker, hello):
        if self.collection is not None and worker.ident not in self.blocks:
            self.collection.hello(worker, hello)
            self.collection = None

    def feed(self, worker, count):
        if self.collection is not None:
            return []
        block = self.blocks.get(worker.ident)
        if block is None:  # the collecting process
            block = self.schedule.next_birth_block()
            if block is None:
                return []
            self.blocks[worker.ident] = block
        if not block.indices or block.target.finished:
            # Its runs all sent: a new test's process goes on with the next of its file.
            following = self.schedule.next_birth_block(block)
            if following is not None:
                block = self.blocks[worker.ident] = following
        return self.schedule.take(block, count)

    def waiting(self, worker):
        block = self.blocks.get(worker.ident)
        return 0 if block is None else block.waiting()

    def result(self, task, outcome):
        return self.schedule.record(task, outcome)

    def lost(self, task):
        task.target.give_back(task.index)


class FreshRuns(BlockRuns):
    """A new process per run, started with its seed as the script starts it, that collects
    the target alone (its node id, as the script names it). A run's time is its process's,
    from its start to its answer."""

    def __init__(self, schedule):
        super().__init__(schedule)
        self.started = {}  # task tag -> when its process was started

    def spawn(self, pool, live):
        if live >= pool.slots:
            return False
        task = self.schedule.take_one()
        if task is None:
            return False
        self.started[task.tag] = time.monotonic()
        pool.spawn([task.target.name], fixed=[task], seed=task.seed)
        return True

    def result(self, task, outcome):
        seconds = time.monotonic() - self.started.pop(task.tag, time.monotonic())
        return super().result(task, outcome._replace(seconds=seconds))
