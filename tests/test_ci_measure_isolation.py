"""`measure` tells order-dependence from flakiness: a target whose in-process repeats all
fail runs once alone in a fresh process and once after the tests before it in its module,
and the pair of outcomes classifies it (issue 16's table); a repeat-unsafe one is measured
again with a fresh process per run. Mixed outcomes are flaky, none failing stable, unless
the target fails every time it runs after the tests before it in its module, as CI runs it
(a victim). Each block of a target's runs has a process of its own, so the answer does not
depend on the worker count."""

from __future__ import annotations

import pytest

from tests.measure_projects import make_project, measure, report, seed_test

pytestmark = pytest.mark.slow  # each test starts a real process

CLASSIFICATIONS = ("stable", "flaky", "broken", "order_dependent", "repeat_unsafe")

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
    "passes alone, fails after its module: order_dependent (a victim)": (
        {"test_m.py": POLLUTED}, ["test_m.py::test_pollutes", "test_m.py::test_victim"],
        ["--workers", "1"],
        [("stable", 8, 0, None),
         ("order_dependent", 8, 0, "fails only after test_m.py::test_pollutes (polluter). "
                                   "Passes on its own (0/8 failed) but failed all 3 runs "
                                   "after the tests before it in the session: one of them "
                                   "leaves state that breaks it (AssertionError: polluted)")]),
    "a victim not among the targets is checked all the same": (
        {"test_m.py": POLLUTED}, ["test_m.py::test_victim"], [],
        [("order_dependent", 8, 0, "failed all 3 runs after the tests before it")]),
    "passes alone and after its module: repeat_unsafe, measured again fresh": (
        {"test_m.py": ONCE_PER_PROCESS}, ["test_m.py::test_once"],
        ["--workers", "1", "--runs", "4"],
        [("repeat_unsafe", 4, 0, "measured again with a fresh process per run")]),
    # Its own runs never follow another target's (0 failed), but CI runs it after the
    # polluter: the session's run finds it, and the bisection names the other module's test.
    "a target that pollutes the process never reaches another target's runs; a polluter in "
    "another module is named": (
        {"test_a.py": POLLUTES_THE_ENVIRONMENT, "test_b.py": READS_THE_ENVIRONMENT},
        ["test_a.py::test_sets_a_variable", "test_b.py::test_clean_environment"],
        ["--workers", "1", "--runs", "4"],
        [("stable", 4, 0, None),
         ("order_dependent", 4, 0, "fails only after test_a.py::test_sets_a_variable "
                                   "(polluter). Passes on its own (0/4 failed) but failed all "
                                   "3 runs after the tests before it in the session")]),
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


def result_lines(stderr: str) -> dict[str, str]:
    """Each target's result line, by its node id."""
    return {line.split()[1].rstrip(":"): line for line in stderr.splitlines()
            if line.split()[:1] and line.split()[0] in CLASSIFICATIONS}


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
    lines = result_lines(done.stderr)
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


HANDLERS = """
    HANDLERS = []


    def test_register_handler():
        HANDLERS.append(print)
        assert print in HANDLERS


    def test_handlers_start_empty():
        assert HANDLERS == [], "a handler is left over"
"""

PARAMS = """
    import pytest

    SEEN = []


    @pytest.mark.parametrize("case", ["a", "b"])
    def test_case(case):
        SEEN.append(case)
        assert set(SEEN) == {case}, "another case ran first"
"""


def test_the_answer_does_not_depend_on_the_worker_count(tmp_path):
    # Two targets that share state through their module, and two params of one test: once
    # they shared long-lived workers, and the answer changed with --workers.
    project = make_project(tmp_path, {"test_handlers.py": HANDLERS, "test_params.py": PARAMS},
                           ["test_handlers.py::test_register_handler",
                            "test_handlers.py::test_handlers_start_empty",
                            "test_params.py::test_case[a]", "test_params.py::test_case[b]"])
    answers = []
    for workers in ("1", "2", "3"):
        done = measure(project, "--runs", "12", "--workers", workers)
        kinds = {target: line.split()[0] for target, line in result_lines(done.stderr).items()}
        answers.append((report(project), kinds))
    assert answers[1] == answers[0] and answers[2] == answers[0]
    rows, kinds = answers[0]
    assert {node: (row["n"], row["fails"]) for node, row in rows.items()} == dict.fromkeys(
        rows, (12, 0))
    # In CI's order the second of each pair fails every time: that is their answer.
    assert kinds == {"test_handlers.py::test_register_handler": "stable",
                     "test_handlers.py::test_handlers_start_empty": "order_dependent",
                     "test_params.py::test_case[a]": "stable",
                     "test_params.py::test_case[b]": "order_dependent"}


def test_a_flaky_target_is_not_called_a_victim_by_its_own_failures(tmp_path):
    # It fails one run in two whatever comes before it: failing after its module three
    # times in a row is what its own rate does one time in eight, so it stays flaky.
    project = make_project(tmp_path, {"test_m.py": seed_test("test_first")
                                      + seed_test("test_half", "seed % 2 == 1")},
                           ["test_m.py::test_half"])
    done = measure(project, "--runs", "8", "--exact")
    assert done.stderr.splitlines()[0].startswith("flaky           test_m.py::test_half: 4/8")


def test_a_session_process_that_ends_early_says_which_targets_it_never_reached(tmp_path):
    """A test before the target ends pytest itself (os._exit) where the session runs it:
    the target is checked after the tests before it in its module instead, and measure
    says why, rather than leaving it unchecked in silence."""
    project = make_project(tmp_path, {
        "test_a.py": "def test_ends_pytest():\n    os._exit(3)\n",
        "test_b.py": seed_test("test_first") + seed_test("test_ok"),
    }, ["test_b.py::test_ok"])
    done = measure(project, "--runs", "8")
    assert ("the session's pytest process ended (exit code 3) before it reached "
            "test_b.py::test_ok: checked after the tests before it in its module only"
            ) in done.stderr, done.stderr
    assert result_lines(done.stderr)["test_b.py::test_ok"].split()[0] == "stable"
    assert report(project)["test_b.py::test_ok"]["n"] == 8
