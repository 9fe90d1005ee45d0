"""`flakeboard_ci.py measure`'s runs in a row: a plain test's runs in a block share one pass of
pytest's protocol, each run its own call, and answer as they would each with a pass of its
own; a test that pytest sets up, evaluates or wraps for each run keeps a pass per run."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from tests.ci_client_view import load_client
from tests.measure_projects import CLIENT, clean_env, make_project, measure, report

client = load_client()
# Each process that makes a report appends its phase: the passes of the protocol, counted.
COUNTING = """
def pytest_runtest_logreport(report):
    with open(os.path.join(os.path.dirname(__file__), "reports.txt"), "a") as handle:
        handle.write(report.when + "\\n")
"""
# A hook around each run that changes nothing but how the runs are made.
AROUND = """
def pytest_runtest_setup(item):
    pass
"""
# Outcomes by seed: failures with their line, pytest.skip and pytest.xfail (neither a
# failure), SystemExit (a failure), a method's instance made anew for each run, state kept
# in the module from run to run, a parameter, a module fixture.
TESTS = """
import pytest

KEPT = []


@pytest.fixture(scope="module")
def shared():
    return []


def test_seeded():
    seed = int(os.environ["PATCH_SEED"])
    assert seed % 3, f"seed {seed} divides by 3"


def test_outcomes():
    seed = int(os.environ["PATCH_SEED"])
    if seed % 5 == 0:
        pytest.skip("fifth")
    if seed % 5 == 1:
        pytest.xfail("known")
    if seed % 5 == 2:
        raise SystemExit(3)


def test_state():
    KEPT.append(1)
    assert len(KEPT) % 4, len(KEPT)


def test_shared(shared):
    shared.append(int(os.environ["PATCH_SEED"]))
    assert len(shared) < 30, len(shared)


@pytest.mark.parametrize("limit", [7])
def test_parameter(limit):
    assert int(os.environ["PATCH_SEED"]) % limit, limit


def test_broken():
    raise LookupError("never there")


class TestMethod:
    def test_instance(self):
        assert not hasattr(self, "seen")
        self.seen = True
"""
TARGETS = [
    "tests/test_row.py::test_seeded",
    "tests/test_row.py::test_outcomes",
    "tests/test_row.py::test_state",
    "tests/test_row.py::test_shared",
    "tests/test_row.py::test_parameter[7]",
    "tests/test_row.py::TestMethod::test_instance",
    "tests/test_row.py::test_broken",
]


def reports(project):
    return (project / "tests" / "reports.txt").read_text().split()


def rows(project, name):
    return {node: (row["n"], row["fails"]) for node, row in report(project, name).items()}


def said(done):
    """What measure said of each target (its time aside)."""
    return sorted(line for line in done.stderr.splitlines() if not line.startswith("Measured"))


@pytest.mark.slow
def test_runs_in_a_row_answer_as_runs_each_with_a_pass_of_their_own(tmp_path):
    project = make_project(
        tmp_path / "project", {"tests/conftest.py": COUNTING, "tests/test_row.py": TESTS}, TARGETS
    )
    runs = ["--exact", "--runs", "120", "--workers", "2", "--order", "module"]
    in_a_row = measure(project, *runs, "-o", "row.json")
    passes_in_a_row = len(reports(project))
    (project / "tests" / "reports.txt").unlink()
    (project / "tests" / "conftest.py").write_text("import os\n\n\n" + COUNTING + AROUND)
    each = measure(project, *runs, "-o", "each.json")

    assert in_a_row.returncode == each.returncode == 1, in_a_row.stderr + each.stderr
    assert rows(project, "row.json") == rows(project, "each.json")
    assert said(in_a_row) == said(each)
    measured = rows(project, "row.json")
    assert measured["tests/test_row.py::test_seeded"] == (120, 40)
    # A failure's line is the run's own: a broken test's is said.
    assert "LookupError: never there" in in_a_row.stderr
    # A fifth of the seeds exit (failures); the skipped and the xfailed ones pass.
    assert measured["tests/test_row.py::test_outcomes"] == (120, 24)
    assert measured["tests/test_row.py::TestMethod::test_instance"] == (120, 0)
    # State kept from run to run in the block's process, as each pass of its own keeps it.
    assert measured["tests/test_row.py::test_state"] == (120, 30)
    assert measured["tests/test_row.py::test_shared"][1] > 0
    # With the hook, each run made its three reports; in a row, far fewer passes did.
    assert len(reports(project)) >= 3 * 120 * len(TARGETS)
    assert passes_in_a_row < len(reports(project)) / 4


PROBE = """
import json
import sys

sys.path.insert(0, {client!r})
from flakeboard_ci import own_protocol_reason  # the served file is one module


def pytest_collection_finish(session):
    reasons = {{item.nodeid: own_protocol_reason(item) for item in session.items}}
    with open("reasons.json", "w") as handle:
        json.dump(reasons, handle)
"""
KINDS = """
import unittest

import pytest


@pytest.fixture
def made_each_time():
    return 1


@pytest.fixture(scope="session")
def made_once():
    return 1


def test_plain():
    pass


def test_once(made_once):
    pass


@pytest.mark.parametrize("value", [1])
def test_parametrized(value):
    pass


def test_each_time(made_each_time):
    pass


def test_tmp(tmp_path):
    pass


def test_request(request):
    pass


@pytest.mark.skipif(False, reason="never")
def test_skipif():
    pass


@pytest.mark.xfail(reason="known")
def test_xfail():
    raise AssertionError


class TestCase(unittest.TestCase):
    def test_unittest(self):
        pass
"""


def reasons(tmp_path, conftest="", ini=""):
    project = make_project(tmp_path / "kinds", {"test_kinds.py": KINDS, "conftest.py": conftest})
    (project / "pytest.ini").write_text(f"[pytest]\n{ini}")
    (project / "probe.py").write_text(PROBE.format(client=str(CLIENT.parent)))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "probe",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        cwd=project,
        env=clean_env(PYTHONPATH=f"{project}:{':'.join(sys.path)}"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return {
        node.split("::", 1)[1]: why
        for node, why in json.loads((project / "reasons.json").read_text()).items()
    }


@pytest.mark.slow
def test_which_tests_keep_a_pass_of_the_protocol_per_run_and_why(tmp_path):
    assert reasons(tmp_path) == {
        "test_plain": "",
        "test_once": "",
        "test_parametrized[1]": "",
        "test_each_time": "its fixture made_each_time is made anew for each run",
        "test_tmp": "its fixture tmp_path is made anew for each run",
        "test_request": "it asks for its request",
        "test_skipif": "its skipif mark is evaluated for each run",
        "test_xfail": "its xfail mark is evaluated for each run",
        "TestCase::test_unittest": "it is a TestCaseFunction, not a plain test function",
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    ("conftest", "ini", "why"),
    [
        (AROUND, "", "conftest implements pytest_runtest_setup"),
        (
            "import pytest\n\n\n@pytest.fixture(autouse=True)\ndef reset():\n    yield\n",
            "",
            "its fixture reset is made anew for each run",
        ),
        ("", "faulthandler_timeout = 5\n", "faulthandler_timeout times each test"),
        (COUNTING, "", ""),  # it only reads the reports
    ],
)
def test_a_hook_or_setting_that_acts_around_each_run_keeps_a_pass_per_run(
    tmp_path, conftest, ini, why
):
    assert reasons(tmp_path, conftest, ini)["test_plain"] == why


@pytest.mark.parametrize(
    ("mean", "chunk"),
    [
        (None, 16),  # nothing answered yet
        (0.5, 16),  # slow runs: the least
        (0.001, 20),  # 20 ms of runs
        (0.0001, 200),
        (0.0, 500),  # the most
    ],
)
def test_a_worker_is_fed_runs_enough_for_their_time(mean, chunk):
    pool = SimpleNamespace(run_seconds=mean)
    assert client.Pool.chunk(pool) == chunk


@pytest.mark.slow
def test_a_run_that_outlasts_the_timeout_is_the_one_that_fails(tmp_path):
    """Runs in a row are answered as each next one begins: the run under way is the one
    the timeout stops, not one that passed before it."""
    project = make_project(tmp_path / "project", {"tests/test_hang.py": """
        import time


        def test_hangs_once():
            if int(os.environ["PATCH_SEED"]) == 9137 + 5:
                time.sleep(60)
    """}, ["tests/test_hang.py::test_hangs_once"])
    done = measure(project, "--exact", "--runs", "10", "--workers", "1", "--timeout", "1.5",
                   "--order", "module")
    assert report(project)["tests/test_hang.py::test_hangs_once"]["fails"] == 1, done.stderr
    assert "its run with PATCH_SEED=9142 was stopped" in done.stderr
