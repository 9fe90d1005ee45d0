"""`measure` names the cause of an order-dependent target. One process runs the whole session
as a bare pytest collects it, each target where CI runs it; a target that fails alone and
after its module but passes there needs state another module sets. Delta debugging over the
tests before it then finds the smallest set that flips it: a polluter (it fails only after
them) or a state-setter (it passes only after them), two when they are needed together."""

from __future__ import annotations

import math
import re
import subprocess
import sys
import tarfile

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.ci_client_view import load_client
from tests.measure_projects import clean_env, make_project, measure, report

CLIENT = load_client()

# A module whose test_sets_up sets READY, and one whose test_needs_setup needs it: the
# state-setter that tests/test_ci_measure_ci_order.py builds on too.
SETS_READY = """
    def test_first():
        pass


    def test_sets_up():
        os.environ["READY"] = "1"
"""
NEEDS_READY = """
    def test_other():
        pass


    def test_needs_setup():
        assert os.environ.get("READY"), "nothing set up"
"""

SETS_UP = SETS_READY + """

    def test_half_one():
        os.environ["HALF_ONE"] = "1"


    def test_between():
        pass


    def test_half_two():
        os.environ["HALF_TWO"] = "1"
"""

DEPENDS = NEEDS_READY + """

    def test_needs_neither_half():
        assert not (os.environ.get("HALF_ONE") and os.environ.get("HALF_TWO")), "both halves"


    def test_always_fails():
        assert False, "always"
"""

MODULES = {"tests/test_a.py": SETS_UP, "tests/test_b.py": DEPENDS}

# name: targets, options, then per target: classification, the cause (role, nodes) or None,
# and what its line says.
ROWS = {
    "a state-setter in another module": (
        ["tests/test_b.py::test_needs_setup"], [],
        [("order_dependent", ("state_setter", ["tests/test_a.py::test_sets_up"]),
          "passes only after tests/test_a.py::test_sets_up (state-setter). Fails alone and "
          "after the tests before it in its module, but passes after the tests before it in "
          "the session: it needs state one of them sets (AssertionError: nothing set up)")]),
    "two polluters needed together": (
        ["tests/test_b.py::test_needs_neither_half"], [],
        [("order_dependent", ("polluter", ["tests/test_a.py::test_half_one",
                                           "tests/test_a.py::test_half_two"]),
          "fails only after tests/test_a.py::test_half_one and tests/test_a.py::test_half_two "
          "together (polluters)")]),
    "a target that fails after everything": (
        ["tests/test_b.py::test_always_fails"], [],
        [("broken", None, "fails alone and after the tests before it in its module and in "
                          "the session (AssertionError: always)")]),
    "--bisect-max stops the bisection and says so": (
        ["tests/test_b.py::test_needs_neither_half"], ["--bisect-max", "4"],
        [("order_dependent", ("polluter", None),
          "fails only after some of 7 tests (tests/test_a.py::test_first, "
          "tests/test_a.py::test_sets_up, tests/test_a.py::test_half_one, ...): the bisection "
          "stopped at --bisect-max 4 runs")]),
    "--bisect-max 0: no bisection": (
        ["tests/test_b.py::test_needs_setup"], ["--bisect-max", "0"],
        [("order_dependent", None, "; fails alone and after the tests before it in its module, "
                                   "but passes after the tests before it in the session")]),
    "--order module: the other module is not looked at": (
        ["tests/test_b.py::test_needs_setup"], ["--order", "module"],
        [("broken", None, "fails alone and after the tests before it in its module "
                          "(AssertionError")]),
}


def result_lines(stderr: str) -> dict[str, str]:
    """Each target's result line by its node id, which may hold spaces: the line is the
    classification padded to 15, the id, then ": "."""
    return {line[16:line.index(": ", 16)]: line for line in stderr.splitlines()
            if line.split()[:1] and line.split()[0] in CLIENT.CLASSIFICATIONS}


@pytest.mark.slow
@pytest.mark.parametrize(("targets", "options", "expected"), ROWS.values(), ids=ROWS.keys())
def test_cause_rows(tmp_path, targets, options, expected):
    project = make_project(tmp_path, MODULES, targets)
    done = measure(project, "--runs", "6", *options)
    assert done.returncode == 1, done.stderr  # 6 runs are under min_runs: FAIL
    lines = result_lines(done.stderr)
    rows = report(project)
    for target, (classification, cause, says) in zip(targets, expected, strict=True):
        assert lines[target].split()[0] == classification, done.stderr
        assert says in lines[target], done.stderr
        assert set(rows[target]) == {"nodeid", "n", "fails", "upper95", "seed_base"}
        if cause is not None:
            role, nodes = cause
            verb = "fails only after" if role == "polluter" else "passes only after"
            assert f"; {verb} " in lines[target]
            assert all(node in lines[target] for node in nodes or ())


@pytest.mark.slow
def test_the_bisection_prints_its_steps(tmp_path):
    project = make_project(tmp_path, MODULES, ["tests/test_b.py::test_needs_setup"])
    done = measure(project, "--runs", "6")
    steps = [line.strip() for line in done.stderr.splitlines() if line.startswith("  ")]
    assert done.stderr.splitlines()[0] == ("BISECT tests/test_b.py::test_needs_setup: the 6 "
                                           "tests before it flip it; narrowing them down")
    # 6 tests: halves of 3, then of 1 or 2: each step's runs, and what they left.
    assert steps[0] == ("tests/test_b.py::test_needs_setup: 2 runs of about 3 tests: "
                        "1 flipped it, 3 left")
    assert steps[-1] == ("tests/test_b.py::test_needs_setup: passes only after "
                         "tests/test_a.py::test_sets_up (state-setter)")
    assert len(steps) <= 1 + math.ceil(math.log2(6))


@pytest.mark.slow
def test_a_target_the_session_does_not_collect_keeps_its_modules_answer(tmp_path):
    # A bare pytest here collects no file of the project (python_files names none): the
    # target is checked in its module only, and is broken there.
    project = make_project(tmp_path, MODULES, ["tests/test_b.py::test_needs_setup"])
    (project / "pytest.ini").write_text("[pytest]\npython_files = check_*.py\n")
    done = measure(project, "--runs", "6")
    line = result_lines(done.stderr)["tests/test_b.py::test_needs_setup"]
    assert line.startswith("broken "), done.stderr
    assert "session" not in line and "BISECT" not in done.stderr


CLICK = "click==8.5.1"
PAGER = "tests/test_utils/test_echo_via_pager.py::test_echo_via_pager[test0- cat ]"


@pytest.mark.slow
def test_clicks_pager_test_needs_a_termui_test_first(tmp_path):
    # click 8.5.1's own suite: the pager test passes in the full run and fails alone (the
    # click._termui_impl attribute is there only once a test imported the module).
    fetched = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps",
                              "--no-binary", ":all:", CLICK, "-d", str(tmp_path)],
                             capture_output=True, text=True, timeout=300)
    if fetched.returncode:
        pytest.skip(f"cannot download {CLICK}'s sdist: {fetched.stderr.strip()[-200:]}")
    with tarfile.open(next(tmp_path.glob("click-*.tar.gz"))) as sdist:
        sdist.extractall(tmp_path, filter="data")
    project = tmp_path / "click-8.5.1"
    (project / "flake_targets.txt").write_text(PAGER + "\n")
    source = str(project / "src")
    done = measure(project, "--runs", "20", timeout=900, PYTHONPATH=source)
    line = result_lines(done.stderr)[PAGER]
    assert line.startswith("order_dependent "), done.stderr
    assert line.endswith("(AttributeError: _termui_impl)"), line
    setter = re.search(r"; passes only after (\S+) \(state-setter\)\. ", line).group(1)
    assert setter.startswith("tests/test_termui.py::"), line
    # As the line says: run after that test alone the target passes, alone it fails.
    for before, code in (([setter], 0), ([], 1)):
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              *before, PAGER], cwd=project, capture_output=True, text=True,
                             env=clean_env(PYTHONPATH=source), timeout=120)
        assert run.returncode == code, run.stdout


# --- the bisection itself, on its own ----------------------------------------------------


def run_ddmin(nodes, flips):
    """ddmin driven by a predicate: the set it returns and the runs it took."""
    steps, runs = CLIENT.ddmin(list(nodes)), 0
    try:
        subsets = next(steps)
        while True:
            runs += len(subsets)
            subsets = steps.send([flips(subset) for subset in subsets])
    except StopIteration as done:
        return done.value, runs


@given(st.integers(1, 200).flatmap(lambda size: st.tuples(
    st.just(size), st.sets(st.integers(0, size - 1), min_size=1, max_size=min(size, 3)))))
def test_ddmin_finds_the_tests_needed_together(case):
    size, needed = case
    nodes = [f"t.py::test_{i}" for i in range(size)]
    wanted = [nodes[i] for i in sorted(needed)]
    found, runs = run_ddmin(nodes, lambda subset: set(wanted) <= set(subset))
    assert found == wanted
    if len(wanted) == 1 and size > 1:
        # Halving: two runs a step, about log2(P) steps.
        assert runs <= 2 * math.ceil(math.log2(size))


@given(st.integers(2, 100), st.data())
def test_a_bisection_stopped_by_its_bound_names_a_set_that_still_flips(size, data):
    culprit = data.draw(st.integers(0, size - 1))
    limit = data.draw(st.integers(1, 20))
    nodes = [f"t.py::test_{i}" for i in range(size)]
    target = CLIENT.Target("t.py::test_victim", 10, 0)
    target.suspected = ("polluter", nodes, 0)
    bisection = CLIENT.Bisection(target, limit)
    subsets = bisection.start()
    runs = 0
    while subsets:
        runs += len(subsets)
        for index, subset in enumerate(subsets):
            following = bisection.answer(index, nodes[culprit] in subset)
        subsets = following
    assert runs <= limit
    assert nodes[culprit] in target.cause["nodes"]
    assert target.cause["complete"] == (target.cause["nodes"] == [nodes[culprit]])


@pytest.mark.parametrize(("named", "uploaded"), [(1, True), (20, True), (21, False)])
def test_a_cause_goes_up_only_within_the_boards_limit(named, uploaded):
    # A bisection stopped early may hold hundreds of tests: the line names them, the
    # upload leaves them out rather than have the board refuse the whole report.
    target = CLIENT.Target("t.py::test_victim", 10, 0)
    target.done, target.classification = 10, "order_dependent"
    target.cause = {"role": "polluter", "nodes": [f"t.py::test_{i}" for i in range(named)],
                    "complete": named == 1}
    assert ("cause" in CLIENT.uploaded_row(target)) is uploaded
