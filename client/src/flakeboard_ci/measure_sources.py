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

    With ``files``, the first process is a base: it loads pytest, its plugins and the
    conftests, and forks a zygote per target's file that collects that file alone, as a
    fresh process would; each block's process is a child of its file's zygote, which starts
    from the same untouched collected state. Where the base cannot fork (no fork here, or
    threads started by a conftest), it collects every file and is fed as any process (new
    tests' runs), and each block starts a fresh process that collects the target's file, as
    without ``files``; so does a block whose file's zygote cannot fork."""

    def __init__(self, schedule, files=None):
        self.schedule, self.blocks = schedule, {}
        self.collection = Collection(schedule.targets, files) if files else None
        self.collected = {}  # a file's zygote's ident -> its hello, until all have said it
        self.pool = None

    def spawn(self, pool, live):
        if self.collection is not None and not self.collection.started:
            self.collection.started, self.pool = True, pool
            if not pool.base_started:  # else one started early: its hello is to come
                pool.spawn(self.collection.files, zygote=True, base=True)
            return True
        if self.collection is not None or live >= pool.slots:
            return False  # the blocks wait for the collection: forked, or fresh processes
        block = self.schedule.next_block()
        if block is None:
            return False
        files = [node_file(block.target.name)]
        zygote = pool.zygote_of(files)
        worker = pool.fork(None, zygote) if zygote is not None else pool.spawn(files)
        self.blocks[worker.ident] = block
        return True

    def hello(self, worker, hello):
        collection = self.collection
        if collection is None or worker.ident in self.blocks:
            return
        if hello.get("base"):
            # A zygote per file, each collecting it alone; the blocks wait for them all.
            for file in collection.files:
                self.collected[self.pool.collect([file], zygote=True).ident] = None
            return
        if worker.ident in self.collected:
            self.collected[worker.ident] = hello
            if any(said is None for said in self.collected.values()):
                return
            hello = merged(list(self.collected.values()))
        collection.hello(worker, hello)
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


def merged(hellos):
    """The hellos of the zygotes of a set of files, as one process that collected them all
    in that order would have said it."""
    return dict(hellos[0], items=[item for hello in hellos for item in hello["items"]],
                errors=[error for hello in hellos for error in hello["errors"]])


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
