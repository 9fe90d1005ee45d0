"""Bad input to `measure` gets a clear message and exit 64, and nothing is written: ids that
all collect nothing or more than one test (which, said), a missing or empty targets file,
no runs, an unusable FLAKE_RUNS, TODAY or budget, and an interpreter without pytest. An id
that cannot be measured beside ids that can is named, and the others are measured."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from tests.ci_client_view import load_client
from tests.measure_projects import make_project, measure, seed_test, written

EXIT_USAGE = 64
MODULES = {
    "test_p.py": seed_test("test_ok") + """
import pytest


@pytest.mark.parametrize("x", [1, 2, 3])
def test_param(x):
    pass
""",
    "test_import_error.py": "import module_that_is_not_there\n",
}

# name: the targets file's lines (None: no file), options, environment, what stderr says.
BAD_INPUT = {
    "an id that collects nothing": (
        ["test_p.py::test_nope"], [], {}, "test_p.py::test_nope collects nothing"),
    "an id in no file": (
        ["tests/nowhere.py::test_x"], [], {},
        "tests/nowhere.py::test_x collects nothing: there is no tests/nowhere.py"),
    "an id in a module that does not import": (
        ["test_import_error.py::test_x"], [], {},
        "test_import_error.py::test_x collects nothing (collecting test_import_error.py "
        "failed: ModuleNotFoundError: No module named 'module_that_is_not_there')"),
    "a parametrized test without its parameters": (
        ["test_p.py::test_param"], [], {},
        "test_p.py::test_param is ambiguous: it collects 3 tests (test_p.py::test_param[1], "
        "test_p.py::test_param[2], test_p.py::test_param[3]); name one of them"),
    "a whole module": (
        ["test_p.py"], [], {}, "test_p.py is ambiguous: it collects 4 tests"),
    "a missing targets file": (
        None, [], {}, "cannot read the targets file flake_targets.txt: No such file"),
    "an empty targets file": (
        ["", "  "], [], {},
        "the targets file flake_targets.txt names no tests: write one node id a line"),
    "a test named twice": (
        ["test_p.py::test_ok", "test_p.py::test_ok"], [], {},
        "names test_p.py::test_ok more than once"),
    "--runs 0": (
        ["test_p.py::test_ok"], ["--runs", "0"], {},
        "the number of runs must be at least 1 (got 0)"),
    "FLAKE_RUNS=0": (
        ["test_p.py::test_ok"], [], {"FLAKE_RUNS": "0"},
        "the number of runs must be at least 1 (got 0)"),
    "FLAKE_RUNS that is not a number": (
        ["test_p.py::test_ok"], [], {"FLAKE_RUNS": "many"},
        "FLAKE_RUNS must be a whole number (got 'many')"),
    "a TODAY that is not a date": (
        ["test_p.py::test_ok"], [], {"TODAY": "15.10.2026"},
        "TODAY must be a date such as 2026-10-15"),
    "a budget of 0": (
        ["test_p.py::test_ok"], ["--max-upper-rate", "0"], {},
        "--max-upper-rate must be within (0, 1]"),
    "a ledger that is not one": (
        ["test_p.py::test_ok"], ["--ledger", "test_p.py"], {}, "cannot read the ledger"),
}


@pytest.fixture
def project(tmp_path):
    project = make_project(tmp_path, MODULES)
    (project / "flake-report.json").write_text("the last report\n")
    return project


@pytest.mark.slow
@pytest.mark.parametrize(("targets", "options", "env", "says"), BAD_INPUT.values(),
                         ids=BAD_INPUT.keys())
def test_bad_input_exits_64_saying_why_and_writes_nothing(project, targets, options, env,
                                                           says):
    if targets is not None:
        (project / "flake_targets.txt").write_text("\n".join(targets) + "\n")
    done = measure(project, *options, **env)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert says in done.stderr
    assert done.stderr.startswith("flakeboard: ")
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    assert written(project) == ["flake-report.json"]
    assert (project / "flake-report.json").read_text() == "the last report\n"


@pytest.mark.slow
def test_every_bad_id_is_named_at_once(project):
    (project / "flake_targets.txt").write_text("test_p.py::test_a\ntest_p.py::test_b\n")
    done = measure(project)
    assert done.returncode == EXIT_USAGE
    assert "test_p.py::test_a collects nothing" in done.stderr
    assert "test_p.py::test_b collects nothing" in done.stderr


@pytest.mark.slow
def test_ids_are_read_from_where_measure_runs(project):
    # A node id relative to a folder below pytest's rootdir names the same test.
    (project / "sub").mkdir()
    (project / "sub" / "test_s.py").write_text(seed_test("test_here").replace(
        "def ", "import os\n\n\ndef ", 1))
    (project / "sub" / "flake_targets.txt").write_text("test_s.py::test_here\n")
    done = measure(project / "sub", "--runs", "5")
    assert done.returncode == 1, done.stderr  # 5 runs: under min_runs
    assert '"nodeid": "test_s.py::test_here"' in (project / "sub" / "flake-report.json"
                                                  ).read_text()


@pytest.mark.slow
def test_an_interpreter_without_pytest_is_named(project, tmp_path):
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    python = bare / "bin" / "python"
    if subprocess.run([str(python), "-c", "import pytest"], capture_output=True).returncode == 0:
        pytest.skip("the base interpreter has pytest")
    (project / "flake_targets.txt").write_text("test_p.py::test_ok\n")
    done = measure(project, python=str(python))
    assert done.returncode == EXIT_USAGE, done.stderr
    assert f"there is no pytest in {python}" in done.stderr
    assert written(project) == ["flake-report.json"]


@pytest.mark.slow
def test_the_ids_that_collect_are_measured_and_the_others_named(project):
    # A JUnit id the board had to guess: the test's folder has a dot in its name, and
    # pytest's classname cannot say so (tests.api.v2.test_users).
    module = project / "tests" / "api.v2" / "test_users.py"
    module.parent.mkdir(parents=True)
    module.write_text(seed_test("test_create").replace("def ", "import os\n\n\ndef ", 1))
    (project / "flake_targets.txt").write_text(
        "tests/api/v2/test_users.py::test_create\ntests/api.v2/test_users.py::test_create\n"
        "test_p.py::test_param\ntest_p.py::test_nope\n")
    done = measure(project, "--runs", "5")
    assert done.returncode == 1, done.stderr  # 5 runs are under min_runs: FAIL
    assert [row["nodeid"] for row in json.loads(
        (project / "flake-report.json").read_text())] == ["tests/api.v2/test_users.py::test_create"]
    assert done.stdout.splitlines() == ["FAIL tests/api.v2/test_users.py::test_create: "
                                        "upper95=0.4345 > 0.02, no quarantine entry"]
    named = [line for line in done.stderr.splitlines() if line.startswith("NOT MEASURED")]
    assert named == [
        "NOT MEASURED tests/api/v2/test_users.py::test_create collects nothing: there is no "
        "tests/api/v2/test_users.py",
        "NOT MEASURED test_p.py::test_param is ambiguous: it collects 3 tests "
        "(test_p.py::test_param[1], test_p.py::test_param[2], test_p.py::test_param[3]); "
        "name one of them",
        "NOT MEASURED test_p.py::test_nope collects nothing"]
    assert done.stderr.splitlines()[-1].startswith("Measured 1 target (1 stable)")


def test_a_pool_closed_at_once_says_nothing_from_its_accepting_thread(tmp_path, monkeypatch):
    # A targets file that collects nothing closes the pool at once; on a busy machine its
    # accepting thread first ran after that, and its traceback led the usage error.
    client = load_client()
    failures = []
    monkeypatch.setattr(threading, "excepthook", failures.append)
    threads, run = [], threading.Thread.run

    def scheduled_late(thread):
        threads.append(thread)
        time.sleep(0.05)
        run(thread)

    monkeypatch.setattr(threading.Thread, "run", scheduled_late)
    for _ in range(5):
        pool = client.Pool(python=sys.executable, folder=str(tmp_path), slots=1, timeout=None,
                           progress=None)
        pool.close()
    for thread in threads:
        thread.join(timeout=5)
    assert len(threads) == 5
    assert [f"{failure.exc_type.__name__}: {failure.exc_value}" for failure in failures] == []
    assert not any(thread.is_alive() for thread in threads)  # each saw the pool closed


@pytest.mark.slow
def test_measures_workspace_compiles_its_plugin_and_is_removed_in_the_background(
        tmp_path, monkeypatch):
    # The plugin compiles in a thread while gate runs; at the end, a process of its own
    # removes the folder with every run's temporary folders, and measure does not wait.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # an empty cache: it compiles
    client = load_client()
    workspace = client.Workspace()
    folder = workspace.folder
    assert os.path.dirname(workspace.path()) == folder
    assert os.path.getsize(workspace.path()) > 0
    runs = os.path.join(folder, "tmp1", "test_steady0")
    os.makedirs(runs)
    with open(os.path.join(runs, "x"), "w") as handle:
        handle.write("x")
    removing = len(client.REMOVING)
    workspace.discard()
    workspace.discard()  # once only
    assert len(client.REMOVING) == removing + 1
    assert client.REMOVING[-1].wait(timeout=60) == 0
    assert not os.path.exists(folder)
