"""SPEC 2.4d: a flaky node's diagnosis (``flakeboard.rules.diagnosis``) and Fisher's exact
test (``flakeboard.rules.stats.fisher_greater``).

The category is the first of order_dependent, seeded, repeat_unsafe, timing, external,
job_specific, ci_only that holds, else unknown; the evidence lists every one that holds,
strongest first; no category without its experiment or its statistic."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakeboard import rules
from flakeboard.rules import (
    SIGNIFICANCE,
    Category,
    diagnose,
    fisher_greater,
    names_network,
)
from tests.properties import PROPERTY

SEEDED = rules.SeedReplay(
    seeds=(9141, 9150), controls=(9137, 9138), seed_runs=4, seed_fails=4, control_runs=4,
    control_fails=0, command="python3 flakeboard_ci.py replay 'tests/x.py::test_y' --seed 9141")
LOAD = rules.LoadBlock(idle_n=100, idle_fails=2, load_n=100, load_fails=31,
                       command="python3 flakeboard_ci.py replay 'tests/x.py::test_y' --stress")
RESET = ("ConnectionResetError: [Errno <n>] Connection reset by peer", 4)
JOBS = (rules.JobFigures("py3.13", 40, 6), rules.JobFigures("py3.12", 40, 0),
        rules.JobFigures("py3.11", 40, 0))
CI_ONLY = rules.RatePair(ci_runs=60, ci_failures=4, measured_runs=1000, measured_fails=0)


def measured(classification=None, cause=None, **experiments) -> rules.MeasuredFacts:
    return rules.MeasuredFacts(classification, cause,
                               rules.Experiments(**experiments) if experiments else None)


# --- a row per category ---------------------------------------------------------------------

CATEGORIES = [
    # (measurement facts, CI facts, category, command, evidence holds)
    (measured("order_dependent", "fails only after tests/a.py::test_p"), rules.CiFacts(),
     Category.ORDER_DEPENDENT, None, "fails only after tests/a.py::test_p"),
    (measured("flaky", seeded=SEEDED), rules.CiFacts(), Category.SEEDED, SEEDED.command,
     "4/4 replays at its failing seeds (9141, 9150) failed, 0/4 at the control seeds"),
    (measured("repeat_unsafe"), rules.CiFacts(), Category.REPEAT_UNSAFE, None, "Repeat-unsafe"),
    (measured("flaky", load=LOAD), rules.CiFacts(), Category.TIMING, LOAD.command,
     "2/100 failed idle, 31/100 under CPU load (Fisher's exact p=0.0000)"),
    (measured("flaky"), rules.CiFacts(signatures=(RESET, ("AssertionError", 1))),
     Category.EXTERNAL, None, "4/5 failures name the network or a service"),
    (measured("flaky"), rules.CiFacts(jobs=JOBS), Category.JOB_SPECIFIC, None,
     "6/40 flaky failures in CI job py3.13, 0/80 in the others"),
    (measured("stable"), rules.CiFacts(rates=CI_ONLY), Category.CI_ONLY, None,
     "4/60 failed in CI's JUnit"),
    (measured("flaky"), rules.CiFacts(), Category.UNKNOWN, None, None),
]


@pytest.mark.parametrize(("facts", "ci", "category", "command", "evidence"), CATEGORIES,
                         ids=[row[2].value for row in CATEGORIES])
def test_each_category(facts, ci, category, command, evidence) -> None:
    diagnosis = diagnose(facts, ci)
    assert diagnosis.category is category
    assert diagnosis.command == command
    if evidence is None:
        assert diagnosis.evidence == ()
    else:
        assert evidence in diagnosis.evidence[0]


def test_every_category_has_a_row() -> None:
    assert {row[2] for row in CATEGORIES} == set(Category)


def test_evidence_lists_every_category_that_holds_strongest_first() -> None:
    diagnosis = diagnose(measured("order_dependent", "fails only after a", seeded=SEEDED,
                                  load=LOAD),
                         rules.CiFacts(jobs=JOBS, rates=CI_ONLY, signatures=(RESET,)))
    assert diagnosis.category is Category.ORDER_DEPENDENT
    assert [line.split(" ")[0] for line in diagnosis.evidence] == [
        "Order-dependent:", "4/4", "2/100", "4/4", "6/40", "4/60"]
    # No reproduction for an order-dependent test: the strongest other evidence's is given.
    assert diagnosis.command == SEEDED.command


def test_order_dependent_without_a_cause_says_what_it_is() -> None:
    diagnosis = diagnose(measured("order_dependent"))
    assert diagnosis.evidence == ("Order-dependent: its outcome depends on the tests run "
                                  "before it.",)


# --- the edges --------------------------------------------------------------------------------

def test_p_at_the_threshold_is_not_significant() -> None:
    # 1/1 under load, 0/99 idle: exactly one draw in a hundred puts the failure there.
    assert fisher_greater(1, 1, 0, 99) == SIGNIFICANCE
    load = rules.LoadBlock(idle_n=99, idle_fails=0, load_n=1, load_fails=1)
    assert diagnose(measured("flaky", load=load)).category is Category.UNKNOWN
    # One more idle pass puts it just below.
    load = rules.LoadBlock(idle_n=100, idle_fails=0, load_n=1, load_fails=1)
    assert diagnose(measured("flaky", load=load)).category is Category.TIMING


@pytest.mark.parametrize("replay", [
    rules.SeedReplay((1,), (2,), seed_runs=2, seed_fails=1, control_runs=2, control_fails=0),
    rules.SeedReplay((1,), (2,), seed_runs=2, seed_fails=2, control_runs=2, control_fails=1),
    rules.SeedReplay((1,), (2,), seed_runs=0, seed_fails=0, control_runs=2, control_fails=0),
    rules.SeedReplay((1,), (2,), seed_runs=2, seed_fails=2, control_runs=0, control_fails=0),
], ids=["a seed passed once", "a control failed", "no replay", "no control"])
def test_seeded_needs_every_replay_to_fail_and_every_control_to_pass(replay) -> None:
    diagnosis = diagnose(measured("flaky", seeded=replay))
    assert diagnosis.category is Category.UNKNOWN
    assert diagnosis.tried == ("seed replay",)


def test_equal_rates_under_load_are_not_timing() -> None:
    load = rules.LoadBlock(idle_n=100, idle_fails=10, load_n=100, load_fails=10)
    assert diagnose(measured("flaky", load=load)).category is Category.UNKNOWN


def test_job_specific_needs_three_flaky_failures_in_the_job() -> None:
    jobs = (rules.JobFigures("py3.13", 2, 2), rules.JobFigures("py3.12", 500, 0))
    assert fisher_greater(2, 2, 0, 500) < SIGNIFICANCE
    assert diagnose(None, rules.CiFacts(jobs=jobs)).category is Category.UNKNOWN
    jobs = (rules.JobFigures("py3.13", 3, 3), rules.JobFigures("py3.12", 500, 0))
    assert diagnose(None, rules.CiFacts(jobs=jobs)).category is Category.JOB_SPECIFIC


def test_one_job_alone_is_not_job_specific() -> None:
    diagnosis = diagnose(None, rules.CiFacts(jobs=(rules.JobFigures("py3.13", 40, 20),)))
    assert diagnosis.category is Category.UNKNOWN


def test_two_jobs_tied_name_the_first_by_name() -> None:
    jobs = (rules.JobFigures("b", 10, 5), rules.JobFigures("a", 10, 5),
            rules.JobFigures("c", 400, 0))
    diagnosis = diagnose(None, rules.CiFacts(jobs=jobs))
    assert diagnosis.category is Category.JOB_SPECIFIC
    assert diagnosis.evidence[0].startswith("5/10 flaky failures in CI job a, 5/410 in the")


def test_ci_only_needs_disjoint_intervals() -> None:
    overlapping = rules.RatePair(ci_runs=60, ci_failures=4, measured_runs=100, measured_fails=2)
    assert diagnose(None, rules.CiFacts(rates=overlapping)).category is Category.UNKNOWN
    assert diagnose(None, rules.CiFacts(rates=CI_ONLY)).category is Category.CI_ONLY


def test_external_needs_most_failures_to_name_the_network() -> None:
    half = rules.CiFacts(signatures=(RESET, ("AssertionError: assert <n> == <n>", 4)))
    assert diagnose(None, half).category is Category.UNKNOWN
    assert diagnose(None, rules.CiFacts(signatures=(RESET, ("", 9)))).category is Category.EXTERNAL


@pytest.mark.parametrize(("text", "network"), [
    ("ConnectionResetError: [Errno <n>] Connection reset by peer", True),
    ("ConnectionRefusedError: [Errno <n>] Connection refused", True),
    ("socket.gaierror: [Errno -<n>] Name or service not known", True),
    ("Temporary failure in name resolution", True),
    ("requests.exceptions.ReadTimeout: HTTPSConnectionPool(host='api', port=<n>): Read timed "
     "out.", True),
    ("urllib.error.HTTPError: HTTP Error <n>: Service Unavailable", True),
    ("HTTPError: 503 Server Error: Bad Gateway for url", True),
    ("urllib.error.HTTPError: HTTP Error <n>: Not Found", False),
    ("AssertionError: assert <n> == <n>", False),
    ("TimeoutError: deadline of <n>s passed", False),
    ("KeyError: 'host'", False),
])
def test_network_signatures(text, network) -> None:
    assert names_network(text) is network


def test_nothing_tried() -> None:
    diagnosis = diagnose(None, None)
    assert (diagnosis.category, diagnosis.evidence, diagnosis.command, diagnosis.tried) == (
        Category.UNKNOWN, (), None, ())


@pytest.mark.parametrize(("skipped", "said"), [
    ("budget", "experiments cut short: --diagnose-budget ran out"),
    ("disabled", "experiments skipped: --no-diagnose"),
])
def test_unknown_says_what_was_tried_and_what_was_skipped(skipped, said) -> None:
    overlapping = rules.RatePair(ci_runs=60, ci_failures=1, measured_runs=100, measured_fails=1)
    diagnosis = diagnose(
        measured("flaky", load=rules.LoadBlock(100, 3, 100, 4), skipped=skipped),
        rules.CiFacts(jobs=(rules.JobFigures("", 10, 1),), rates=overlapping,
                      signatures=(("AssertionError", 1),)))
    assert diagnosis.category is Category.UNKNOWN
    assert diagnosis.tried == ("CPU load", "CI jobs", "CI against measured rate",
                               "failure signatures", said)


def test_experiments_from_the_wire() -> None:
    wire = {"seeded": {"seeds": [9141, 9150], "controls": [9137, 9138], "seed_runs": 4,
                       "seed_fails": 4, "control_runs": 4, "control_fails": 0,
                       "command": SEEDED.command},
            "load": {"idle_n": 100, "idle_fails": 2, "load_n": 100, "load_fails": 31,
                     "command": LOAD.command},
            "skipped": "budget"}
    assert rules.Experiments.from_wire(wire) == rules.Experiments(SEEDED, LOAD, "budget")
    assert rules.Experiments.from_wire(None) is None


def test_answer_is_the_contracts_object() -> None:
    diagnosis = diagnose(measured("flaky", seeded=SEEDED))
    assert diagnosis.answer() == {"category": "seeded", "evidence": list(diagnosis.evidence),
                                  "command": SEEDED.command, "tried": ["seed replay"]}


# --- Fisher's exact test ----------------------------------------------------------------------

def brute_force_fisher(fails: int, n: int, other_fails: int, other_n: int) -> Fraction:
    """Every way to deal the failures among the runs, counted: the share that puts at least
    ``fails`` of them among the first group's runs."""
    runs, failures = n + other_n, fails + other_fails
    if runs == 0 or failures == 0:
        return Fraction(1)
    from itertools import combinations
    dealt = list(combinations(range(runs), failures))
    return Fraction(sum(sum(run < n for run in deal) >= fails for deal in dealt), len(dealt))


@st.composite
def tables(draw, most: int = 2000):
    """A 2x2 table (fails, n, other fails, other n), each n at most ``most``."""
    n, other_n = draw(st.integers(0, most)), draw(st.integers(0, most))
    return (draw(st.integers(0, n)), n, draw(st.integers(0, other_n)), other_n)


@PROPERTY
@given(tables(most=6))
def test_fisher_matches_the_brute_force_sum(table) -> None:
    assert math.isclose(fisher_greater(*table), float(brute_force_fisher(*table)),
                        rel_tol=1e-12)


@PROPERTY
@given(tables())
def test_fisher_is_a_probability(table) -> None:
    assert 0.0 <= fisher_greater(*table) <= 1.0


@PROPERTY
@given(tables())
def test_fisher_one_more_failure_in_the_group_never_raises_p(table) -> None:
    fails, n, other_fails, other_n = table
    if fails < n and other_fails > 0:  # move one failure from the others into the group
        assert fisher_greater(fails + 1, n, other_fails - 1, other_n) <= fisher_greater(*table)


# --- no category without its experiment or its statistic --------------------------------------

counts = st.integers(0, 60)


@st.composite
def seed_replays(draw):
    runs, controls = draw(counts), draw(counts)
    return rules.SeedReplay((1,), (2,), runs, draw(st.integers(0, runs)), controls,
                            draw(st.integers(0, controls)), draw(st.none() | st.just("replay")))


@st.composite
def load_blocks(draw):
    idle, load = draw(counts), draw(counts)
    return rules.LoadBlock(idle, draw(st.integers(0, idle)), load, draw(st.integers(0, load)),
                           draw(st.none() | st.just("stress")))


@st.composite
def rate_pairs(draw):
    ci, runs = draw(st.integers(0, 400)), draw(st.integers(0, 400))
    return rules.RatePair(ci, draw(st.integers(0, ci)), runs, draw(st.integers(0, runs)))


@st.composite
def job_figures(draw):
    runs = draw(counts)
    return rules.JobFigures(draw(st.sampled_from(["", "py3.12", "py3.13", "linux"])), runs,
                            draw(st.integers(0, runs)))


facts = st.builds(
    rules.MeasuredFacts,
    classification=st.none() | st.sampled_from(
        ["stable", "flaky", "broken", "order_dependent", "repeat_unsafe"]),
    cause=st.none() | st.just("fails only after tests/a.py::test_p"),
    experiments=st.none() | st.builds(rules.Experiments, seeded=st.none() | seed_replays(),
                                      load=st.none() | load_blocks(),
                                      skipped=st.none() | st.sampled_from(["budget",
                                                                           "disabled"])),
)
ci_facts = st.builds(
    rules.CiFacts,
    jobs=st.lists(job_figures(), max_size=4, unique_by=lambda job: job.job).map(tuple),
    rates=st.none() | rate_pairs(),
    signatures=st.lists(st.tuples(st.sampled_from([RESET[0], "AssertionError", "",
                                                   "HTTP Error <n>: Bad Gateway"]),
                                  st.integers(0, 9)), max_size=4).map(tuple),
)
# What each category needs, before any statistic is asked.
NEEDS = {
    Category.ORDER_DEPENDENT: lambda m, ci: m.classification == "order_dependent",
    Category.SEEDED: lambda m, ci: m.experiments is not None and m.experiments.seeded
    is not None,
    Category.REPEAT_UNSAFE: lambda m, ci: m.classification == "repeat_unsafe",
    Category.TIMING: lambda m, ci: m.experiments is not None and m.experiments.load
    is not None,
    Category.EXTERNAL: lambda m, ci: any(text and count for text, count in ci.signatures),
    Category.JOB_SPECIFIC: lambda m, ci: len(ci.jobs) > 1,
    Category.CI_ONLY: lambda m, ci: ci.rates is not None and ci.rates.ci_runs > 0
    and ci.rates.measured_runs > 0,
    Category.UNKNOWN: lambda m, ci: True,
}
# Each evidence line's category, by how it begins or what it says.
LINE_CATEGORY = (
    ("Order-dependent:", Category.ORDER_DEPENDENT),
    ("replays at its failing seeds", Category.SEEDED),
    ("Repeat-unsafe:", Category.REPEAT_UNSAFE),
    ("under CPU load", Category.TIMING),
    ("name the network", Category.EXTERNAL),
    ("flaky failures in CI job", Category.JOB_SPECIFIC),
    ("failed in CI's JUnit", Category.CI_ONLY),
)


def line_category(line: str) -> Category:
    (category,) = [category for said, category in LINE_CATEGORY if said in line]
    return category


@PROPERTY
@given(facts, ci_facts)
def test_no_category_without_its_experiment_or_statistic(m, ci) -> None:
    diagnosis = diagnose(m, ci)
    assert NEEDS[diagnosis.category](m, ci)
    for line in diagnosis.evidence:
        assert NEEDS[line_category(line)](m, ci)


@PROPERTY
@given(facts, ci_facts)
def test_the_category_is_the_first_evidence_lines(m, ci) -> None:
    diagnosis = diagnose(m, ci)
    if diagnosis.evidence:
        assert line_category(diagnosis.evidence[0]) is diagnosis.category
        order = [category for _, category in LINE_CATEGORY]
        shown = [order.index(line_category(line)) for line in diagnosis.evidence]
        assert shown == sorted(set(shown))
    else:
        assert diagnosis.category is Category.UNKNOWN and diagnosis.command is None


@PROPERTY
@given(facts, ci_facts)
def test_a_command_comes_from_an_experiment_that_held(m, ci) -> None:
    diagnosis = diagnose(m, ci)
    held = {line_category(line) for line in diagnosis.evidence}
    if diagnosis.command == "replay":
        assert Category.SEEDED in held
    elif diagnosis.command == "stress":
        assert Category.TIMING in held
    else:
        assert diagnosis.command is None


def test_the_label_names_the_category_and_an_order_dependent_tests_cause() -> None:
    assert diagnose(measured("order_dependent", "fails only after a")).label == (
        "order_dependent (fails only after a)")
    assert diagnose(measured("flaky", load=LOAD)).label == "timing"
    # The cause is the order-dependent category's: another category's label is its own.
    assert diagnose(measured("repeat_unsafe", "fails only after a")).label == "repeat_unsafe"
    assert diagnose(measured("flaky")).label == ""


@pytest.mark.parametrize(("classification", "fails", "needed"), [
    ("flaky", 3, True),
    ("order_dependent", 0, True),
    ("repeat_unsafe", 0, True),
    ("broken", 200, False),  # broken, not flaky: fixed, not diagnosed
    ("stable", 0, False),
    (None, 1, True),  # the budget script's row: it failed a run
    (None, 0, False),
])
def test_which_measurements_are_diagnosed(classification, fails, needed):
    assert rules.needs_diagnosis(classification, fails) is needed
