"""Why a flaky node is flaky (SPEC 2.4d): one category, the evidence that decided it, and a
reproduction command where one exists.

The inputs are the client's experiments on the node's latest measurement (seed replay, a
block of runs under CPU load) with its classification, and what CI's JUnit files show of
the node (its flaky failures per job, CI's rate at the commits it was measured at, its
failure signatures). The categories, strongest first; the first that holds decides, and
the evidence lists every one that holds, in this order:

1. ``order_dependent``: the measurement classified it so (its cause, as the board words it);
2. ``seeded``: every replay at a failing seed failed, and every control seed passed;
3. ``repeat_unsafe``: the measurement classified it so;
4. ``timing``: its failure rate under CPU load is above its idle rate, by Fisher's exact
   test, one-sided, p < SIGNIFICANCE;
5. ``external``: most of its failures' signatures name the network or a service;
6. ``job_specific``: its flaky failures in CI concentrate in one job, by Fisher's exact
   test over that job against the others, p < SIGNIFICANCE, with at least
   JOB_SPECIFIC_MIN_FAILURES flaky failures there;
7. ``ci_only``: CI's failure rate at the commits it was measured at is above the measured
   rate there, by disjoint Wilson 95% intervals;
8. ``unknown``: none of these; ``tried`` says what was looked at.

No category holds without its experiment or its statistic. The command is the deciding
category's reproduction, else the strongest other evidence's that has one.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from . import diagnosis_facts as facts
from .network import names_network
from .stats import fisher_greater, lower95, upper95
from .vocab import Classification

# The measurements that get a diagnosis: those the client found flaky, order-dependent or
# repeat-unsafe, and any unclassified one that failed a run (``needs_diagnosis``).
DIAGNOSED_CLASSIFICATIONS = (Classification.FLAKY, Classification.ORDER_DEPENDENT,
                             Classification.REPEAT_UNSAFE)
SIGNIFICANCE = 0.01
JOB_SPECIFIC_MIN_FAILURES = 3
SKIPPED = ("budget", "disabled")
# What each skip says in ``tried``.
SKIPPED_WORDS = {"budget": "experiments cut short: --diagnose-budget ran out",
                 "disabled": "experiments skipped: --no-diagnose"}


class Category(StrEnum):
    ORDER_DEPENDENT = "order_dependent"
    SEEDED = "seeded"
    TIMING = "timing"
    REPEAT_UNSAFE = "repeat_unsafe"
    JOB_SPECIFIC = "job_specific"
    CI_ONLY = "ci_only"
    EXTERNAL = "external"
    UNKNOWN = "unknown"


def needs_diagnosis(classification: str | None, fails: int) -> bool:
    """Whether a measurement's node is flaky or suspect: diagnosed, and answered with it.
    A classified one by its classification (a broken test is not flaky: it is fixed, not
    diagnosed); one the upload did not classify (the budget script's) when it failed a run."""
    if classification is not None:
        return classification in DIAGNOSED_CLASSIFICATIONS
    return fails > 0


# What each experiment or statistic is called in ``tried``.
SEED_REPLAY = "seed replay"
CPU_LOAD = "CPU load"
CI_JOBS = "CI jobs"
CI_AGAINST_MEASURED = "CI against measured rate"
FAILURE_SIGNATURES = "failure signatures"


@dataclass(frozen=True)
class Diagnosis:
    category: Category
    evidence: tuple[str, ...]  # strongest first, each a sentence with its numbers
    command: str | None  # the reproduction
    tried: tuple[str, ...]  # what was looked at, whatever the category
    cause: str | None = None  # an order-dependent test's, as the board words it

    @property
    def label(self) -> str:
        """The category in a word for a failure's line ("" for unknown); an order-dependent
        test's with its cause: ``order_dependent (fails only after tests/a.py::test_p)``."""
        if self.category is Category.UNKNOWN:
            return ""
        return f"{self.category} ({self.cause})" if self.cause else self.category.value

    def answer(self) -> dict:
        """The API's object."""
        return {"category": self.category.value, "evidence": list(self.evidence),
                "command": self.command, "tried": list(self.tried)}


@dataclass(frozen=True)
class _Line:
    category: Category
    text: str
    command: str | None = None


def _order_dependent(measured: facts.MeasuredFacts) -> _Line | None:
    if measured.classification != Classification.ORDER_DEPENDENT:
        return None
    cause = measured.cause or "its outcome depends on the tests run before it"
    return _Line(Category.ORDER_DEPENDENT, f"Order-dependent: {cause}.")


def _seeded(seeded: facts.SeedReplay | None) -> _Line | None:
    if seeded is None or not (seeded.seed_runs > 0 and seeded.seed_fails == seeded.seed_runs
                              and seeded.control_runs > 0 and seeded.control_fails == 0):
        return None
    seeds = ", ".join(map(str, seeded.seeds))
    controls = ", ".join(map(str, seeded.controls))
    return _Line(Category.SEEDED,
                 f"{seeded.seed_fails}/{seeded.seed_runs} replays at its failing seeds "
                 f"({seeds}) failed, {seeded.control_fails}/{seeded.control_runs} at the "
                 f"control seeds ({controls}).", seeded.command)


def _repeat_unsafe(measured: facts.MeasuredFacts) -> _Line | None:
    if measured.classification != Classification.REPEAT_UNSAFE:
        return None
    return _Line(Category.REPEAT_UNSAFE, "Repeat-unsafe: repeating it in one process changes "
                                         "its outcome.")


def _timing(load: facts.LoadBlock | None) -> _Line | None:
    if load is None:
        return None
    p = fisher_greater(load.load_fails, load.load_n, load.idle_fails, load.idle_n)
    if not p < SIGNIFICANCE:
        return None
    return _Line(Category.TIMING,
                 f"{load.idle_fails}/{load.idle_n} failed idle, {load.load_fails}/"
                 f"{load.load_n} under CPU load (Fisher's exact p={p:.4f}).", load.command)


def _external(signatures: tuple[tuple[str, int], ...]) -> _Line | None:
    named = [(text, count) for text, count in signatures if text and count > 0]
    total = sum(count for _, count in named)
    network = [(text, count) for text, count in named if names_network(text)]
    failures = sum(count for _, count in network)
    if not failures * 2 > total:
        return None
    top = max(network, key=lambda pair: pair[1])[0]
    return _Line(Category.EXTERNAL,
                 f"{failures}/{total} failures name the network or a service, most often "
                 f"“{top}”.")


def _job_specific(jobs: tuple[facts.JobFigures, ...]) -> _Line | None:
    best = None
    for job in jobs:
        others = [other for other in jobs if other is not job]
        other_runs = sum(other.runs for other in others)
        other_fails = sum(other.flaky_failures for other in others)
        p = fisher_greater(job.flaky_failures, job.runs, other_fails, other_runs)
        if (job.flaky_failures >= JOB_SPECIFIC_MIN_FAILURES and p < SIGNIFICANCE
                and (best is None or (p, job.job) < (best[0], best[1].job))):
            best = (p, job, other_fails, other_runs)
    if best is None:
        return None
    p, job, other_fails, other_runs = best
    return _Line(Category.JOB_SPECIFIC,
                 f"{job.flaky_failures}/{job.runs} flaky failures in CI job "
                 f"{job.job or '(no job)'}, {other_fails}/{other_runs} in the others "
                 f"(Fisher's exact p={p:.4f}).")


def _ci_only(rates: facts.RatePair | None) -> _Line | None:
    if rates is None or rates.ci_runs <= 0 or rates.measured_runs <= 0:
        return None
    ci_lower = lower95(rates.ci_failures, rates.ci_runs)
    measured_upper = upper95(rates.measured_fails, rates.measured_runs)
    if not ci_lower > measured_upper:
        return None
    return _Line(Category.CI_ONLY,
                 f"{rates.ci_failures}/{rates.ci_runs} failed in CI's JUnit (at least "
                 f"{ci_lower:.1%} at 95%), {rates.measured_fails}/{rates.measured_runs} "
                 f"measured at the same commits (at most {measured_upper:.1%} at 95%).")


def _tried(measured: facts.MeasuredFacts, ci: facts.CiFacts) -> tuple[str, ...]:
    experiments = measured.experiments or facts.Experiments()
    looked = (
        (SEED_REPLAY, experiments.seeded is not None),
        (CPU_LOAD, experiments.load is not None),
        (CI_JOBS, bool(ci.jobs)),
        (CI_AGAINST_MEASURED, ci.rates is not None and ci.rates.ci_runs > 0
         and ci.rates.measured_runs > 0),
        (FAILURE_SIGNATURES, any(text and count > 0 for text, count in ci.signatures)),
    )
    skipped = (SKIPPED_WORDS[experiments.skipped],) if experiments.skipped in SKIPPED_WORDS else ()
    return tuple(name for name, done in looked if done) + skipped


def diagnose(measured: facts.MeasuredFacts | None = None,
             ci: facts.CiFacts | None = None) -> Diagnosis:
    """The node's diagnosis from its latest measurement and CI's JUnit facts."""
    measured = measured or facts.MeasuredFacts()
    ci = ci or facts.CiFacts()
    experiments = measured.experiments or facts.Experiments()
    lines = [line for line in (
        _order_dependent(measured),
        _seeded(experiments.seeded),
        _repeat_unsafe(measured),
        _timing(experiments.load),
        _external(ci.signatures),
        _job_specific(ci.jobs),
        _ci_only(ci.rates),
    ) if line is not None]
    tried = _tried(measured, ci)
    if not lines:
        return Diagnosis(Category.UNKNOWN, (), None, tried)
    command = next((line.command for line in lines if line.command), None)
    category = lines[0].category
    return Diagnosis(category, tuple(line.text for line in lines), command, tried,
                     measured.cause if category is Category.ORDER_DEPENDENT else None)
