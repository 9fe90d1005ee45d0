"""measure and gate on a project whose addopts run pytest-xdist: each of measure's workers is
one pytest process all the same, and it says so; gate records every node the xdist workers
ran, as it does without them."""

import json

import pytest

from tests.measure_projects import gate, make_project, measure, report, seed_test, seeds_failing
from tests.test_ci_gate_outcomes import FAR, STOPS, checks, full_ledger

pytestmark = pytest.mark.slow  # each test starts a real process

pytest.importorskip("xdist")  # the project's plugin, from this environment

OFTEN = "seed % 4 == 0"


@pytest.mark.parametrize(("addopts", "said"), [
    ("-p xdist -n 2", "pytest-xdist (-n 2) is set aside"),
    ("-p xdist -n auto --dist loadfile", "pytest-xdist (-n "),  # auto, as xdist counted it
])
def test_measure_sets_the_projects_xdist_aside(tmp_path, addopts, said):
    project = make_project(tmp_path, {"test_m.py": seed_test("test_often", OFTEN)
                                      + seed_test("test_steady")},
                           ["test_m.py::test_often", "test_m.py::test_steady"])
    (project / "pytest.ini").write_text(f"[pytest]\naddopts = {addopts}\n")
    done = measure(project, "--runs", "8", "--exact")
    assert done.returncode == 1, done.stderr  # 8 runs are under min_runs: FAIL
    assert said in done.stderr
    assert done.stderr.count("is set aside") == 1
    rows = report(project)
    assert (rows["test_m.py::test_often"]["n"], rows["test_m.py::test_often"]["fails"]) == \
        (8, seeds_failing(OFTEN, 8))
    assert (rows["test_m.py::test_steady"]["n"], rows["test_m.py::test_steady"]["fails"]) == \
        (8, 0)


def test_without_xdist_in_addopts_nothing_is_said(tmp_path):
    project = make_project(tmp_path, {"test_m.py": seed_test("test_steady")},
                           ["test_m.py::test_steady"])
    done = measure(project, "--runs", "8", "--exact")
    assert "xdist" not in done.stderr
    assert report(project)["test_m.py::test_steady"]["n"] == 8


@pytest.mark.parametrize("addopts", ["-p xdist -n 2", "-p xdist -n 2 --dist loadfile"])
def test_gate_records_what_the_xdist_workers_ran(tmp_path, addopts):
    project = make_project(tmp_path, {"test_stops.py": STOPS,
                                      "test_more.py": "def test_steady():\n    pass\n"})
    (project / "pytest.ini").write_text(f"[pytest]\naddopts = {addopts}\n")
    done = gate(project, "--ledger", full_ledger(project))
    assert done.returncode == 1, done.stdout + done.stderr
    assert checks(project) == {"test_one": "pass", "test_two": "fail", "test_three": "pass",
                               "test_four": "pass", "test_steady": "pass"}
    assert "REJECT test_stops.py::test_two: property_fail" in done.stdout


def test_gate_under_xdist_leaves_the_frozen_out_and_says_which(tmp_path):
    project = make_project(tmp_path, {"test_stops.py": STOPS})
    (project / "pytest.ini").write_text("[pytest]\naddopts = -p xdist -n 2\n")
    ledger = full_ledger(project, [("test_stops.py::test_two", FAR)])
    done = gate(project, "--ledger", ledger, "--deselect-frozen")
    assert done.returncode == 0, done.stdout + done.stderr
    assert checks(project) == {"test_one": "pass", "test_three": "pass", "test_four": "pass"}
    sent = json.loads((project / "signals.json").read_text())
    assert sent["deselected_frozen"] == ["test_stops.py::test_two"]


def test_a_collection_error_under_xdist_is_named_once(tmp_path):
    project = make_project(tmp_path, {"test_stops.py": STOPS, "test_bad.py": "import nothere\n"})
    (project / "pytest.ini").write_text("[pytest]\naddopts = -p xdist -n 2\n")
    done = gate(project, "--ledger", full_ledger(project))
    assert done.returncode != 0
    assert done.stdout.count("test_bad.py") + done.stderr.count("test_bad.py") >= 1
    assert done.stdout.count("No module named 'nothere'") == 1, done.stdout
