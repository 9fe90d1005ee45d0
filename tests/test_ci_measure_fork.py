"""`flakeboard_ci.py measure`'s blocks of runs forked from one collected parent: the files
are collected once, each block runs in a child of its own, and where forking is unsafe (a
project that starts threads at import) each block is a fresh process, said once; either way
the answer is the same. The checks in CI's order of a module's targets share one process,
a child of the same collection."""

from __future__ import annotations

import collections

import pytest

from tests.measure_projects import make_project, measure, report
from tests.test_ci_measure import seeded  # noqa: F401 - the fixture

NOTICE = "flakeboard: each block of runs starts a fresh pytest process"
# The conftest counts the collections: each process that imports it appends its process id.
COUNTING = """
HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "collections.txt"), "a") as handle:
    handle.write(f"{os.getpid()}\\n")
"""
THREADED = """
import threading
import time

threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
"""
PIDS = """
def test_pid():
    with open(os.path.join(os.path.dirname(__file__), "runs.txt"), "a") as handle:
        handle.write(f"{os.getpid()}\\n")
"""


def lines(path):
    return path.read_text().split()


def counting_project(root, conftest=""):
    """One target alone in its module, 250 runs: three blocks (100, 100, 50)."""
    return make_project(root, {"conftest.py": COUNTING + conftest, "tests/test_pid.py": PIDS},
                        ["tests/test_pid.py::test_pid"])


@pytest.mark.slow
def test_each_block_is_a_child_of_the_one_collection(tmp_path):
    project = counting_project(tmp_path / "project")
    done = measure(project, "--exact", "--runs", "250", "--workers", "2", "--order", "module")
    assert done.returncode == 0, done.stderr
    assert NOTICE not in done.stderr
    assert report(project)["tests/test_pid.py::test_pid"]["n"] == 250
    [collector] = lines(project / "collections.txt")  # collected once, by the zygote
    runs = collections.Counter(lines(project / "tests" / "runs.txt"))
    # A process per block, none of them the one that collected: it ran no test.
    assert sorted(runs.values()) == [50, 100, 100]
    assert collector not in runs


@pytest.mark.slow
def test_threads_at_import_make_each_block_a_fresh_process_said_once(tmp_path):
    project = counting_project(tmp_path / "project", THREADED)
    done = measure(project, "--exact", "--runs", "250", "--workers", "2", "--order", "module")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count(NOTICE) == 1
    assert "thread(s) running" in done.stderr
    assert report(project)["tests/test_pid.py::test_pid"]["n"] == 250
    collectors = lines(project / "collections.txt")
    runs = collections.Counter(lines(project / "tests" / "runs.txt"))
    # The first collection, then a process of its own for each block, which collects.
    assert sorted(runs.values()) == [50, 100, 100]
    assert len(collectors) == 4 and set(runs) == set(collectors[1:])


@pytest.mark.slow
def test_forked_blocks_answer_as_fresh_processes_do(seeded):  # noqa: F811
    forked = measure(seeded, "--exact", "--runs", "150", "--workers", "2", "-o", "forked.json")
    assert NOTICE not in forked.stderr
    (seeded / "conftest.py").write_text(THREADED)
    fresh = measure(seeded, "--exact", "--runs", "150", "--workers", "2", "-o", "fresh.json")
    assert fresh.stderr.count(NOTICE) == 1
    assert forked.returncode == fresh.returncode == 1
    assert forked.stdout == fresh.stdout
    assert (seeded / "forked.json").read_text() == (seeded / "fresh.json").read_text()
    assert {row["n"] for row in report(seeded, "forked.json").values()} == {150}


@pytest.mark.slow
def test_a_modules_targets_share_one_check_in_order_each_after_the_tests_before_it(tmp_path):
    project = make_project(tmp_path / "project", {
        "conftest.py": COUNTING,
        "test_m.py": """
            def test_first():
                pass


            def test_pollutes():
                with open("pollutes.txt", "a") as handle:
                    handle.write(f"{os.getpid()}\\n")
                os.environ["POLLUTED"] = "1"


            def test_victim():
                assert "POLLUTED" not in os.environ


            def test_last():
                pass
        """}, ["test_m.py::test_first", "test_m.py::test_victim", "test_m.py::test_last"])
    done = measure(project, "--runs", "8", "--workers", "1", "--order", "module",
                   "--bisect-max", "0")
    classes = {line.split()[1].rstrip(":"): line.split()[0] for line in done.stderr.splitlines()
               if line.startswith(("stable", "order_dependent"))}
    assert classes == {"test_m.py::test_first": "stable", "test_m.py::test_last": "stable",
                       "test_m.py::test_victim": "order_dependent"}, done.stderr
    # One process checks both targets with tests before them in order (the victim fails
    # there, test_last passes after it), then the victim's two checks again: each a child
    # of the one collection.
    pollutes = lines(project / "pollutes.txt")
    assert len(pollutes) == len(set(pollutes)) == 3
    assert len(lines(project / "collections.txt")) == 1


@pytest.mark.slow
def test_the_session_check_is_a_child_of_a_collection_of_the_session(tmp_path):
    """The check in CI's order of the whole session forks from a process that collected the
    session while the runs went on: two collections in all, and no check pays one."""
    project = make_project(tmp_path / "project", {
        "conftest.py": COUNTING, "tests/test_pid.py": PIDS,
        "tests/test_before.py": "def test_before():\n    pass\n"}, ["tests/test_pid.py::test_pid"])
    done = measure(project, "--exact", "--runs", "200", "--workers", "2")
    assert done.returncode == 0, done.stderr
    assert "stable          tests/test_pid.py::test_pid" in done.stderr
    collectors = lines(project / "collections.txt")
    runs = collections.Counter(lines(project / "tests" / "runs.txt"))
    # The targets' files, then the session: each collected once, by a process that ran
    # nothing. Two blocks of 100 runs, then the session's run of the target, each in a child.
    assert len(collectors) == 2
    assert sorted(runs.values()) == [1, 100, 100] and not set(runs) & set(collectors)


@pytest.mark.slow
def test_a_session_that_cannot_be_collected_leaves_the_checks_to_the_module(tmp_path):
    project = make_project(tmp_path / "project", {
        "tests/test_pid.py": PIDS,
        "tests/test_broken_import.py": "raise SystemExit('not importable')\n"},
        ["tests/test_pid.py::test_pid"])
    done = measure(project, "--exact", "--runs", "200", "--workers", "2")
    assert done.returncode == 0, done.stderr
    assert "the whole session could not be collected here" in done.stderr
    assert "stable          tests/test_pid.py::test_pid: 0/200 failed" in done.stderr


@pytest.mark.slow
def test_a_targets_runs_never_see_another_targets_module_imported(tmp_path):
    """Each target's blocks fork from a process that collected its file alone, as a fresh
    process would: a module another target's file imports at collection is not there.
    click 8.5.1's pager test is the real case: it passes only once a test module imported
    click._termui_impl, and measured beside such a module it came out stable."""
    modules = {
        "tests/test_a_setter.py": """
            os.environ["SET_BY_AN_IMPORT"] = "1"


            def test_setter():
                pass
        """,
        "tests/test_needs.py": """
            def test_needs():
                assert os.environ.get("SET_BY_AN_IMPORT") == "1", "nothing set it"
        """,
    }
    classes = {}
    for targets in (["tests/test_needs.py::test_needs"],
                    ["tests/test_a_setter.py::test_setter", "tests/test_needs.py::test_needs"]):
        project = make_project(tmp_path / str(len(targets)), modules, targets)
        done = measure(project, "--runs", "20", "--workers", "2", "--bisect-max", "0")
        classes[len(targets)] = {line.split()[1].rstrip(":"): line.split()[0]
                                 for line in done.stderr.splitlines()
                                 if line.startswith(("stable ", "order_dependent ", "broken "))}
    # Alone it fails, after its module too, and passes in the session: a state-setter's.
    assert classes[1] == {"tests/test_needs.py::test_needs": "order_dependent"}
    assert classes[2] == {"tests/test_needs.py::test_needs": "order_dependent",
                          "tests/test_a_setter.py::test_setter": "stable"}
