"""`measure` tells order-dependence from flakiness: a target whose in-process repeats all
fail runs once alone in a fresh process and once after the tests before it in its module,
and the pair of outcomes classifies it (issue 16's table); a repeat-unsafe one is measured
again with a fresh process per run. Mixed outcomes are flaky, none failing stable."""

from __future__ import annotations

import pytest

from tests.measure_projects import make_project, measure, report, seed_test

NEEDS_STATE = """
    STATE = {}


    def test_sets_up():
        STATE["ready"] = True


    def test_needs_state():
        assert STATE.get("ready"), "nothing set up"
"""

POLLUTED = """
    STATE = {}


    def test_pollutes():
        STATE["dirty"] = True


    def test_victim():
        assert not STATE.get("dirty"), "polluted"
"""

ONCE_PER_PROCESS = """
    RAN = []


    def test_once():
        assert not RAN, "ran before in this process"
        RAN.append(True)
"""

POLLUTES_THE_ENVIRONMENT = """
    def test_sets_a_variable():
        os.environ["LEFT_BEHIND"] = "1"
"""

READS_THE_ENVIRONMENT = """
    def test_clean_environment():
        assert "LEFT_BEHIND" not in os.environ
"""

# name: modules, targets, options, then per target: classification, n, fails, and what
# the line says (or None). 8 runs unless said: a broken target stops at its third failure.
TABLE = {
    "fails alone and after its module: broken": (
        {"test_m.py": seed_test("test_ok") + seed_test("test_broken", "True")},
        ["test_m.py::test_broken"], [],
        [("broken", 3, 3, "fails alone and after the tests before it in its module")]),
    "fails alone, passes after its module: order_dependent": (
        {"test_m.py": NEEDS_STATE}, ["test_m.py::test_needs_state"], [],
        [("order_dependent", 3, 3, "it needs state one of them sets (AssertionError: "
                                   "nothing set up")]),
    "passes alone, fails after its module: order_dependent": (
        {"test_m.py": POLLUTED}, ["test_m.py::test_pollutes", "test_m.py::test_victim"],
        ["--workers", "1"],
        [("stable", 8, 0, None),
         ("order_dependent", 3, 3, "one of them leaves state that breaks it")]),
    "passes alone and after its module: repeat_unsafe, measured again fresh": (
        {"test_m.py": ONCE_PER_PROCESS}, ["test_m.py::test_once"],
        ["--workers", "1", "--runs", "4"],
        [("repeat_unsafe", 4, 0, "measured again with a fresh process per run")]),
    "polluted by a target of another module: repeat_unsafe, measured again fresh": (
        {"test_a.py": POLLUTES_THE_ENVIRONMENT, "test_b.py": READS_THE_ENVIRONMENT},
        ["test_a.py::test_sets_a_variable", "test_b.py::test_clean_environment"],
        ["--workers", "1", "--runs", "4"],
        [("stable", 4, 0, None), ("repeat_unsafe", 4, 0, "passes alone and after its module")]),
    "--fresh, fails alone but passes after its module: order_dependent": (
        {"test_m.py": NEEDS_STATE}, ["test_m.py::test_needs_state"], ["--fresh"],
        [("order_dependent", 3, 3, "it needs state one of them sets")]),
    "mixed outcomes: flaky": (
        {"test_m.py": seed_test("test_thirds", "seed % 3 == 0")}, ["test_m.py::test_thirds"],
        ["--exact"], [("flaky", 8, 3, None)]),
    "never fails: stable": (
        {"test_m.py": seed_test("test_ok")}, ["test_m.py::test_ok"], [],
        [("stable", 8, 0, None)]),
}


# The rows that start a process per run are the fast lane's slowest: the full run has them.
FRESH_PROCESSES = ("repeat_unsafe", "--fresh")


@pytest.mark.parametrize(("modules", "targets", "options", "expected"), [
    pytest.param(*row, id=name,
                 marks=[pytest.mark.slow] if any(w in name for w in FRESH_PROCESSES) else [])
    for name, row in TABLE.items()
])
def test_isolation_table(tmp_path, modules, targets, options, expected):
    project = make_project(tmp_path, modules, targets)
    done = measure(project, "--runs", "8", *options)
    assert done.returncode == 1, done.stderr  # 8 runs are under min_runs: FAIL
    rows = report(project)
    lines = {line.split()[1].rstrip(":"): line for line in done.stderr.splitlines()[:-1]}
    for target, (classification, n, fails, says) in zip(targets, expected, strict=True):
        assert (rows[target]["n"], rows[target]["fails"]) == (n, fails), done.stderr
        assert lines[target].split()[0] == classification, done.stderr
        if says:
            assert says in lines[target]
        else:
            assert ";" not in lines[target]


def test_the_isolation_check_needs_every_repeat_failing(tmp_path):
    # A seed-driven flaky target is never checked in isolation, even when it fails often:
    # its line says nothing about its module.
    project = make_project(tmp_path, {"test_m.py": seed_test("test_often", "seed % 2 == 0")},
                           ["test_m.py::test_often"])
    done = measure(project, "--runs", "8", "--exact")
    line = done.stderr.splitlines()[0]
    assert line.startswith("flaky           test_m.py::test_often: 4/8 failed")
    assert "module" not in line
