"""measure's checks in CI's order: the isolation of the targets (alone, after their module,
where the session runs them) and the bisection's steps, each a source of the pool's fresh
processes."""

from __future__ import annotations

import collections

from .measure_bisect import Bisection
from .measure_procs import SESSION
from .measure_runs import SCRIPT_SEED_BASE, Task, order_seeds
from .measure_sources import Source
from .outputs import node_file


class IsolationChecks(Source):
    """Fresh processes that place targets in CI's order. A suspect (its repeats all failed)
    runs alone (unless its runs already were alone) and after the tests before it in its
    module. With ``session``, a process collects the whole session as CI's pytest does and
    runs it in order up to the last target, each target where CI runs it: a suspect that
    fails there too is broken. The order is the collection's, or for targets the board
    holds CI's JUnit of (``target.ci``) that file's, one process per file. A target whose
    own runs passed runs there (or after the tests before it in its module, without the
    session) with the seed of a run that passed, and while it fails, again up to
    ORDER_CHECKS times, each in a process of its own."""

    def __init__(self, suspects, alone, tags, in_order=(), session=False, progress=None,
                 closed=None):
        self.pending, self.tags, self.progress = [], tags, progress
        self.closed = closed  # whether the measurement's deadline has passed (gate's budget)
        self.suspects, self.in_order = list(suspects), list(in_order)
        for target in self.suspects:
            target.isolation = {}
            if alone:
                self._fixed(target.files_of([]), target, target.seed_base, "alone", [])
            if target.predecessors:
                self._fixed(target.files_of([]), target, target.seed_base, "after",
                            target.predecessors)
        for target in self.in_order:
            target.in_order = []
        # The whole-session processes: the targets each is to place, due to start, then
        # by process; and each started one's tasks.
        self.due, self.sessions, self.tasks = [], {}, {}
        self.unreached = []  # targets a session process was sent and never ran
        self.fell_back = False
        if session:
            groups = collections.OrderedDict()
            for target in [*self.suspects, *self.in_order]:
                groups.setdefault(target.ci.file if target.ci else None, []).append(target)
            self.due = list(groups.values())
        else:
            self._in_modules(self.in_order)

    def _fixed(self, files, target, seed, index, before):
        tasks = [Task(next(self.tags), node, seed, None, None) for node in before]
        self.pending.append((files, [*tasks, Task(next(self.tags), target.node, seed, target,
                                                  index)]))

    def _in_modules(self, targets):
        """The targets' first checks in CI's order within their modules: one process per
        module runs its tests in order up to its last such target, so each target runs
        after exactly the tests before it in its module; a test before a target runs with
        that target's seed, each target with its own."""
        modules = collections.OrderedDict()
        for target in targets:
            if target.predecessors and target in self.in_order:
                modules.setdefault(node_file(target.node), []).append(target)
        for module in modules.values():
            module.sort(key=lambda target: len(target.predecessors))
            tasks, placed = [], set()
            for target in module:
                seed = order_seeds(target)[0]
                tasks.extend(Task(next(self.tags), node, seed, None, None)
                             for node in target.predecessors if node not in placed)
                placed.update([*target.predecessors, target.node])
                tasks.append(Task(next(self.tags), target.node, seed, target, "in_order"))
            self.pending.append((module[-1].files_of([]), tasks))

    def _again(self, target, seed):
        files = target.files_of([]) if target.scope == "module" else SESSION
        self._fixed(files, target, seed, "in_order", target.in_ci_order())

    def spawn(self, pool, live):
        if live >= pool.slots:
            return False
        if self.due:
            # No files: pytest collects what a bare `pytest` here would, in its order (a
            # shuffling plugin set aside: the order is the collection's).
            self.sessions[pool.session(SCRIPT_SEED_BASE).ident] = self.due.pop(0)
            return True
        if self.closed is not None and self.closed():
            # Past the deadline only the suspects' checks start: they decide between broken,
            # order_dependent and repeat_unsafe. A check in CI's order does not, and the
            # classification by the target's own runs stands.
            self.pending = [(files, tasks) for files, tasks in self.pending
                            if tasks[-1].index != "in_order"]
        if not self.pending:
            return False
        files, tasks = self.pending.pop(0)
        pool.start(files, tasks, tasks[-1].seed)
        return True

    def hello(self, worker, hello):
        targets = self.sessions.get(worker.ident)
        if targets is None:
            return
        items = hello["items"]
        ci = targets[0].ci
        if ci is not None:
            # CI's order, of the tests collected here: a test since renamed or removed, or
            # an id the board could only guess, is left out.
            collected = set(items)
            items = [node for node in ci.order if node in collected]
        where = {node: position for position, node in enumerate(items)}
        seeds = {}
        for target in targets:
            if target in self.in_order:
                seeds[target.node] = (target, order_seeds(target)[0], "in_order")
            else:
                seeds[target.node] = (target, target.seed_base, "session")
        found = [target for target in targets if target.node in where]
        for target in found:
            target.before = items[:where[target.node]]
            if ci is not None and self.progress is not None:
                self.progress.note(ci_order_line(target))
        self._in_modules([target for target in targets if target.node not in where])
        last = max((where[target.node] for target in found), default=-1)
        tasks = self.tasks[worker.ident] = collections.deque()
        for node in items[:last + 1]:
            target, seed, index = seeds.get(node, (None, SCRIPT_SEED_BASE, None))
            if target is not None and not target.before:
                target, index = None, None  # first in the session: nothing before it
            tasks.append(Task(next(self.tags), node, seed, target, index))

    def feed(self, worker, count):
        tasks, queued = [], self.tasks.get(worker.ident, ())
        while queued and len(tasks) < count:
            tasks.append(queued.popleft())
        return tasks

    def waiting(self, worker):
        return len(self.tasks.get(worker.ident, ()))

    def unheard(self, worker, why):
        if self.progress is not None and not self.fell_back:
            self.progress.note("flakeboard: the whole session could not be collected here, "
                               "so targets are checked after the tests before them in their "
                               "module only: " + why.splitlines()[-1].strip())
        self.fell_back = True
        self._in_modules(self.sessions.pop(worker.ident, []))
        return True

    def lost(self, task):
        """A task a session process was sent but never ran: its queue is read at its end."""
        if task.target is not None:
            self.unreached.append(task.target)

    def ended(self, worker, code):
        """A session process that ended before it reached its targets (a test before them
        ended pytest itself): those are checked after the tests before them in their
        module, and measure says so."""
        queued = self.tasks.pop(worker.ident, ())
        unreached = [*self.unreached, *(task.target for task in queued if task.target)]
        self.unreached = []
        if worker.ident not in self.sessions or not unreached:
            return
        if self.progress is not None:
            self.progress.note(
                f"flakeboard: the session's pytest process ended (exit code {code}) before it "
                f"reached {', '.join(target.name for target in unreached)}: checked after the "
                f"tests before {'them' if len(unreached) > 1 else 'it'} in "
                f"{'their' if len(unreached) > 1 else 'its'} module only")
        self._in_modules(unreached)

    def result(self, task, outcome):
        target = task.target
        if target is None:
            return False
        if task.index != "in_order":
            target.isolation[task.index] = outcome
            return False
        target.in_order.append(outcome)
        seeds = order_seeds(target)
        if outcome.failed and len(target.in_order) < len(seeds):
            self._again(target, seeds[len(target.in_order)])
        return False


def ci_order_line(target):
    """Where CI ran the target, as measure prints it before checking it there."""
    ci, count = target.ci, len(target.before)
    left_out = len(ci.before()) - count
    return (f"ORDER {target.name}: CI's order from its JUnit ({ci.where()}), {count} "
            f"test{'s' * (count != 1)} before it" + (
                f" ({left_out} of CI's not collected here)" if left_out else ""))


class Bisections(Source):
    """Delta debugging for each order-dependent target over the tests that flip it: each
    step's subsets run at once, each in a fresh process that collects their files and runs
    them in CI's order, then the target; the steps are printed as they end."""

    def __init__(self, targets, tags, limit, progress):
        self.tags, self.progress, self.pending = tags, progress, []
        for target in targets:
            bisection = Bisection(target, limit)
            count = len(bisection.smallest)
            progress.note(f"BISECT {target.name}: " + (
                "the one test before it flips it" if count == 1 else
                f"the {count} tests before it flip it; narrowing them down"))
            self._queue(bisection, bisection.start())

    def _queue(self, bisection, subsets):
        if not bisection.trying:
            self.progress.note(f"  {bisection.target.name}: {bisection.sentence}")
            return
        target = bisection.target
        for index, subset in enumerate(subsets):
            files = target.files_of(subset)
            tasks = [Task(next(self.tags), node, bisection.seed, None, None) for node in subset]
            tasks.append(Task(next(self.tags), target.node, bisection.seed, bisection, index))
            self.pending.append((files, tasks))

    def spawn(self, pool, live):
        if live >= pool.slots or not self.pending:
            return False
        files, tasks = self.pending.pop(0)
        pool.start(files, tasks, tasks[-1].seed)
        return True

    def result(self, task, outcome):
        bisection = task.target
        if isinstance(bisection, Bisection):
            steps = len(bisection.lines)
            subsets = bisection.answer(task.index, outcome.failed)
            for line in bisection.lines[steps:]:
                self.progress.note(f"  {bisection.target.name}: {line}")
            if subsets or not bisection.trying:
                self._queue(bisection, subsets)
        return False
