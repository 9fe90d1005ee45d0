"""measure's runs of a target: the script's numbers, the Wilson bounds and the early stop,
and the classification of what they found (measure_schedule.py hands the runs out)."""

from __future__ import annotations

import collections
import os

from .core import UsageError
from .measure_bisect import POLLUTER, STATE_SETTER
from .outputs import node_file
from .stats import lower95, upper95

SCRIPT_SEED_BASE = 9137
SCRIPT_RUNS = 200  # FLAKE_RUNS' default and the script's min_runs
SCRIPT_MAX_UPPER_RATE = 0.02
EARLY_STOP_MIN_FAILS = 3
# A target's runs are laid out in blocks of this many, each block run by a process of its
# own: the layout depends on the target alone, never on the worker count.
RUNS_PER_PROCESS = 100
# A target whose own runs passed is run after the tests before it in its module (CI's
# order) up to this many times, each in a fresh process: a victim fails every time.
ORDER_CHECKS = 3
# ... and is called order_dependent only when its own failure rate would fail that many
# checks in a row less often than this.
ORDER_CHANCE = 0.01
CLASSIFICATIONS = ("stable", "flaky", "broken", "order_dependent", "repeat_unsafe")


def stops_early(fails, done, runs, max_upper_rate):
    """Whether a target may stop after ``done`` of its ``runs`` runs with ``fails`` failures:
    no outcome of the rest could bring it within budget, and the runs done are evidence of a
    rate over budget (95% confidence), not one unlucky run."""
    return (fails >= EARLY_STOP_MIN_FAILS
            and upper95(fails, runs) > max_upper_rate
            and lower95(fails, done) > max_upper_rate)


def _rootdir_id(name, rootdir, cwd):
    """A node id given from ``cwd`` as pytest names it from its rootdir."""
    path, sep, rest = name.partition("::")
    relative = os.path.relpath(os.path.join(cwd, path), rootdir).replace(os.sep, "/")
    return relative + sep + rest


def resolve_targets(names, hello, cwd):
    """Each target's collected node id, from a worker's hello (its items and collection
    errors), and why each of the others collects nothing or more than one test."""
    items, problems, resolved = hello["items"], {}, {}
    errors = dict(hello["errors"])
    for name in names:
        wanted = _rootdir_id(name, hello["rootdir"], cwd)
        if wanted in items:
            resolved[name] = wanted
            continue
        found = [item for item in items if item.startswith((wanted + "::", wanted + "["))]
        if len(found) == 1:
            resolved[name] = found[0]
        elif found:
            shown = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
            problems[name] = (f"{name} is ambiguous: it collects {len(found)} tests ({shown}); "
                              f"name one of them")
        else:
            error = errors.get(node_file(wanted))
            problems[name] = (f"{name} collects nothing" + (
                f" (collecting {node_file(name)} failed: {error})" if error else ""))
    return resolved, problems


def predecessors(node, items):
    """The items that come before ``node`` in its module, in the order pytest runs them."""
    before = items[:items.index(node)]
    return [item for item in before if node_file(item) == node_file(node)]


Task = collections.namedtuple("Task", "tag node seed target index")
Outcome = collections.namedtuple("Outcome", "failed seconds detail first")


class Target:
    """A node id of the targets file and what its runs found. Run i sees PATCH_SEED =
    seed_base + i; the report counts the runs 0..n-1 that completed in a row, so the counts
    do not depend on which worker finished first."""

    def __init__(self, name, runs, seed_base):
        self.name, self.runs, self.seed_base = name, runs, seed_base
        self.node, self.predecessors, self.rootdir = None, [], None
        self.before = None  # the tests before it in the session, when it collected it
        self.ci = None  # CI's order at the commit, from the board's JUnit (CiOrder)
        self.suspected = None  # (role, the tests that flip it, seed): what to bisect
        self.cause = None  # what the bisection found: role, nodes, complete
        self.unmeasured = None  # why it cannot be measured: it collects no test, or several
        # A new test measured at birth by gate's guard (docs/new-tests.md): its runs may
        # share a process with the other new tests of its file, and gate's own run was its
        # check in order.
        self.birth = False
        self.classification, self.why, self.reported = None, "", False
        self.isolation = {}  # "alone", "after": the Outcome of each isolation check
        self.experiments = {}  # the diagnosis's evidence (measure_experiments.py), as uploaded
        self.reset()

    def reset(self):
        self.outcomes = {}  # run index -> Outcome
        self.returned = []  # indices handed back by a worker that was stopped
        self.done = self.fails = 0
        self.stopped = False
        # Left with runs not started when the measurement's deadline passed (gate's
        # budget): it counts the runs it has, or none.
        self.cut = False
        self.started = None
        self.in_order = []  # the Outcomes of its runs after the tests before it, in CI's order

    @property
    def finished(self):
        return (self.stopped or self.cut or self.done == self.runs
                or self.unmeasured is not None)

    def layout(self):
        """Its runs as the processes run them: blocks of RUNS_PER_PROCESS in index order."""
        return [range(start, min(start + RUNS_PER_PROCESS, self.runs))
                for start in range(0, self.runs, RUNS_PER_PROCESS)]

    def give_back(self, index):
        if not self.finished and index not in self.outcomes:
            self.returned.append(index)

    def take_returned(self):
        """The runs a stopped process handed back, in index order, for a new process."""
        indices = [] if self.finished else sorted(self.returned)
        self.returned = []
        return indices

    def record(self, index, outcome, early, max_upper_rate):
        """Count one run; True when it finished the target."""
        if self.finished or index in self.outcomes:
            return False
        self.outcomes[index] = outcome
        while self.done in self.outcomes and not self.stopped:
            self.fails += self.outcomes[self.done].failed
            self.done += 1
            self.stopped = early and self.done < self.runs and stops_early(
                self.fails, self.done, self.runs, max_upper_rate)
        return self.finished

    def counted(self):
        return [self.outcomes[i] for i in range(self.done)]

    def suspect(self):
        """Whether repeating it in process may be what fails it: every run failed, or each
        worker's first run of it passed and every later one failed."""
        runs = self.counted()
        if not runs or not any(run.failed for run in runs):
            return False
        later = [run for run in runs if not run.first]
        return all(run.failed for run in runs) or (
            bool(later) and all(run.failed for run in later)
            and not any(run.failed for run in runs if run.first))

    def row(self):
        """The report's row, in the script's shape and key order."""
        return {"nodeid": self.name, "n": self.done, "fails": self.fails,
                "upper95": round(upper95(self.fails, self.done), 4),
                "seed_base": self.seed_base}

    def seconds(self):
        return sum(outcome.seconds for outcome in self.outcomes.values())

    @property
    def scope(self):
        """Where the order before it comes from: "ci" (the board's JUnit of the commit),
        "session" (the collection's) or "module"."""
        if self.before is None:
            return "module"
        return "session" if self.ci is None else "ci"

    def files_of(self, nodes):
        """The files of ``nodes`` (ids from pytest's rootdir) as paths from here, in their
        order, then its own file: what a process that runs them and then it collects."""
        here = os.getcwd()
        files = [os.path.relpath(os.path.join(self.rootdir or here, node_file(node)), here)
                 for node in nodes]
        return list(dict.fromkeys([*files, os.path.normpath(node_file(self.name))]))

    def in_ci_order(self):
        """The tests before it in CI's order: the session's, else its module's."""
        return self.predecessors if self.before is None else self.before


def classify_by_outcomes(target):
    """stable or flaky; a suspect target waits for its isolation check."""
    if not target.suspect():
        target.classification = "flaky" if target.fails else "stable"


def order_seeds(target):
    """The seeds of its check in CI's order: those of its first runs that passed, so that a
    failure there is the order's doing, not the seed's."""
    passed = [i for i in range(target.done) if not target.outcomes[i].failed]
    return [target.seed_base + i for i in passed[:ORDER_CHECKS]]


def needs_order_check(target):
    """Whether to run the target again after the tests before it in CI's order: its own
    runs passed (all, or all but a few)."""
    return (not target.birth and target.classification in ("stable", "flaky")
            and bool(order_seeds(target)))


IN_SCOPE = {"module": "in its module", "session": "in the session", "ci": "in CI's order"}


CI_SAW = {"passed": "CI saw it pass there", "failed": "CI saw it fail there",
          "error": "CI saw it error there", "skipped": "CI skipped it there"}


class CiOrder:
    """The order CI ran a target in at the commit, from one JUnit file the board holds: the
    file's tests up to the last target it holds (shared by those targets), the target's
    index among them, and its outcome there."""

    def __init__(self, commit, file, position, outcome):
        self.commit, self.position, self.outcome = commit, position, outcome
        self.file, self.job, self.attempt = file["id"], file["job"], file["attempt"]
        self.order = file["order"]

    def before(self):
        return self.order[:self.position]

    def where(self):
        job = f"job {self.job}, " if self.job else ""
        return f"{job}attempt {self.attempt} at {self.commit[:12]}"

    def said(self):
        """What CI saw there, as the result line says it."""
        saw = CI_SAW.get(self.outcome, f"CI's result there was {self.outcome}")
        return f"{saw} ({self.where()})"


def with_ci(target, why):
    """``why``, and what CI saw where the check ran it in CI's order."""
    return f"{why}. {target.ci.said()}" if target.scope == "ci" else why


def classify_in_order(target):
    """A target whose own runs passed becomes order_dependent (a victim) when it failed
    every one of its ORDER_CHECKS runs after the tests before it in CI's order, and its own
    failure rate would do that by chance less often than ORDER_CHANCE."""
    checks = target.in_order
    if len(checks) < ORDER_CHECKS or not all(check.failed for check in checks):
        return target.classification
    if (target.fails / max(target.done, 1)) ** len(checks) > ORDER_CHANCE:
        return target.classification
    detail = next((check.detail for check in checks if check.detail), "")
    target.classification = "order_dependent"
    target.why = (f"passes on its own ({target.fails}/{target.done} failed) but failed all "
                  f"{len(checks)} runs after the tests before it {IN_SCOPE[target.scope]}: "
                  f"one of them leaves state that breaks it" + (f" ({detail})" if detail else ""))
    target.why = with_ci(target, target.why)
    target.suspected = (POLLUTER, target.in_ci_order(), order_seeds(target)[0])
    return target.classification


# The isolation check of a target whose in-process runs all failed: (fails alone, fails
# after the tests before it in its module) -> its classification, the role of the tests
# before it when they flip it, and why.
ISOLATION = {
    (True, True): ("broken", None, "fails alone and after the tests before it in its module"),
    (True, False): ("order_dependent", STATE_SETTER,
                    "fails alone but passes after the tests before it in its module: it "
                    "needs state one of them sets"),
    (False, True): ("order_dependent", POLLUTER,
                    "passes alone but fails after the tests before it in its module: one of "
                    "them leaves state that breaks it"),
    (False, False): ("repeat_unsafe", None,
                     "passes alone and after its module, fails when repeated in one process: "
                     "measured again with a fresh process per run"),
}
NEEDS_THE_SESSION = ("fails alone and after the tests before it in its module, but passes "
                     "after the tests before it {where}: it needs state one of them sets")
BROKEN_IN_THE_SESSION = "fails alone and after the tests before it in its module and {where}"


def adopt_collection(targets, hello, cwd):
    """Give each target its collected node and the nodes before it in its module, or why it
    cannot be measured; UsageError naming every target when none can."""
    wanted = [target for target in targets if target.unmeasured is None]
    nodes, problems = resolve_targets([target.name for target in wanted], hello, cwd)
    if not nodes:
        raise UsageError("\n".join([*(t.unmeasured for t in targets if t.unmeasured),
                                    *problems.values()]))
    for target in wanted:
        if target.name in problems:
            target.unmeasured = problems[target.name]
            continue
        target.node, target.rootdir = nodes[target.name], hello["rootdir"]
        target.predecessors = predecessors(target.node, hello["items"])


def classify_isolated(target):
    """The isolation table's classification of a suspect target, from its checks: one
    that fails alone and after its module is order_dependent when it passes after the tests
    before it in the session, else broken."""
    runs = target.counted()
    # Without an "alone" check, its runs were each alone already (--fresh): all failed.
    alone = target.isolation.get("alone") or next(run for run in runs if run.failed)
    after = target.isolation.get("after", alone)
    classification, role, why = ISOLATION[alone.failed, after.failed]
    flipped_by = target.predecessors
    session = target.isolation.get("session")
    if classification == "broken" and session is not None:
        if session.failed:
            why = BROKEN_IN_THE_SESSION.format(where=IN_SCOPE[target.scope])
        else:
            classification, role = "order_dependent", STATE_SETTER
            why = NEEDS_THE_SESSION.format(where=IN_SCOPE[target.scope])
            flipped_by = target.before
    if not all(run.failed for run in runs) and classification != "repeat_unsafe":
        # Only its first run in each process passed, and isolation does not explain that.
        classification, role, why = "flaky", None, ""
    failure = next((o.detail for o in (alone, after, *runs) if o.failed and o.detail), "")
    if classification in ("broken", "order_dependent") and failure:
        why += f" ({failure})"
    if session is not None and classification in ("broken", "order_dependent"):
        why = with_ci(target, why)
    target.classification, target.why = classification, why
    if role is not None:
        target.suspected = (role, flipped_by, target.seed_base)
    return classification
