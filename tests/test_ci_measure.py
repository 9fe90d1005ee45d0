"""`flakeboard_ci.py measure`: the budget script's contract (same seeds, same report, same
lines, same exit code), made fast: workers that collect once and repeat in process, with
fresh function fixtures per repeat; --fresh; timeouts; progress; the upload."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from runs.models import Measurement, Report
from tests.measure_projects import (
    SEED_BASE,
    budget_script,
    make_project,
    measure,
    report,
    seed_test,
    seeds_failing,
)

pytestmark = pytest.mark.slow  # each test starts a real process

PY38 = Path.home() / ".pyenv" / "versions" / "3.8.18" / "bin" / "python3"
THIRDS, FIFTHS = "seed % 3 == 0", "seed % 5 == 1"


@pytest.fixture
def seeded(tmp_path):
    """Three seed-driven targets: one never fails, one fails a third of its seeds, one a
    fifth; a ledger quarantines the second and holds an expired entry for the third."""
    project = make_project(tmp_path / "project", {
        "tests/test_seeded.py": seed_test("test_never") + seed_test("test_thirds", THIRDS)
                                + seed_test("test_fifths", FIFTHS),
    }, ["tests/test_seeded.py::test_never", "", "tests/test_seeded.py::test_thirds",
        "tests/test_seeded.py::test_fifths"])
    entry = {"class": "flake", "owner": "@finley", "evidence": "ci/run-1"}
    (project / "flake_ledger.json").write_text(json.dumps({
        "tests/test_seeded.py::test_thirds": dict(entry, expires="2026-11-01"),
        "tests/test_seeded.py::test_fifths": dict(entry, expires="2026-10-01"),
    }))
    return project


@pytest.mark.slow
def test_measure_writes_what_the_script_writes_and_exits_as_it_does(seeded):
    runs = 12
    script = budget_script(seeded, FLAKE_RUNS=str(runs))
    expected = (seeded / "flake-report.json").read_bytes()
    (seeded / "flake-report.json").unlink()

    done = measure(seeded, "--exact", FLAKE_RUNS=str(runs))

    assert done.returncode == script.returncode == 1, done.stderr
    assert (seeded / "flake-report.json").read_bytes() == expected
    assert done.stdout == script.stdout
    rows = report(seeded)
    assert [row["fails"] for row in rows.values()] == [
        0, seeds_failing(THIRDS, runs), seeds_failing(FIFTHS, runs)]
    assert list(rows["tests/test_seeded.py::test_thirds"]) == [
        "nodeid", "n", "fails", "upper95", "seed_base"]
    assert "WARN tests/test_seeded.py::test_thirds: quarantined until 2026-11-01" in done.stdout
    assert "FAIL tests/test_seeded.py::test_fifths: quarantine expired on" in done.stdout


def test_counts_are_the_seeds_whatever_the_workers_and_the_seed_base(seeded):
    for workers, base in (("1", SEED_BASE), ("3", 500)):
        done = measure(seeded, "--exact", "--runs", "40", "--workers", workers,
                       "--seed-base", str(base), "-o", f"r{workers}.json")
        assert done.returncode == 1, done.stderr
        rows = report(seeded, f"r{workers}.json")
        assert rows["tests/test_seeded.py::test_thirds"]["fails"] == \
            seeds_failing(THIRDS, 40, base)
        assert rows["tests/test_seeded.py::test_fifths"]["fails"] == \
            seeds_failing(FIFTHS, 40, base)
        assert {row["seed_base"] for row in rows.values()} == {base}
        assert all(row["n"] == 40 for row in rows.values())


def test_a_target_within_budget_passes_the_gate(tmp_path):
    project = make_project(tmp_path, {"test_ok.py": seed_test("test_ok")},
                           ["test_ok.py::test_ok"])
    done = measure(project, FLAKE_RUNS="200")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "OK   test_ok.py::test_ok: upper95=0.0188 over 200 runs\n"
    assert report(project)["test_ok.py::test_ok"]["n"] == 200


REPEATS = """
    import itertools
    import pytest

    made = itertools.count()
    SEEN = set()


    @pytest.fixture(scope="module")
    def module_resource():
        return {"made": next(made), "pid": os.getpid()}


    def test_tmp_path_is_new(tmp_path, module_resource):
        assert not (tmp_path / "marker").exists()
        (tmp_path / "marker").write_text("taken")
        assert tmp_path not in SEEN
        SEEN.add(tmp_path)
        assert module_resource["made"] == 0  # one per process: shared by its repeats
        with open(os.environ["LOG"], "a") as log:
            log.write(f"{module_resource['pid']} {tmp_path}\\n")


    class TestInstance:
        def test_own_instance(self):
            assert not hasattr(self, "touched")
            self.touched = True


    @pytest.mark.parametrize("case", ["a", "b"])
    def test_param(case, tmp_path):
        assert case == "b" and not list(tmp_path.iterdir())
        (tmp_path / "left").write_text("behind")
"""


def test_each_repeat_has_fresh_function_fixtures_and_shares_wider_ones(tmp_path):
    project = make_project(tmp_path / "project", {"tests/test_repeats.py": REPEATS}, [
        "tests/test_repeats.py::test_tmp_path_is_new",
        "tests/test_repeats.py::TestInstance::test_own_instance",
        "tests/test_repeats.py::test_param[b]"])
    log = tmp_path / "runs.log"
    done = measure(project, "--runs", "30", "--workers", "2", LOG=str(log))
    assert done.returncode == 1, done.stderr  # 30 runs are under min_runs: FAIL, not broken
    assert [(row["n"], row["fails"]) for row in report(project).values()] == [(30, 0)] * 3
    runs = [line.split() for line in log.read_text().splitlines()]
    # Its 30 runs, and one in the session's run, where the targets after it are checked
    # in CI's order: every run with a tmp_path of its own.
    assert len(runs) == len({path for _, path in runs}) == 31
    # Its 30 runs repeat in one process (a block of them, whatever the workers), the
    # session is a process of its own: each process made the module's resource once.
    assert sorted(collections.Counter(pid for pid, _ in runs).values()) == [1, 30]


IMPORT_TIME = """
    SEED_AT_IMPORT = int(os.environ["PATCH_SEED"])


    def test_reads_the_seed_at_import():
        assert SEED_AT_IMPORT % 3 != 0
"""


def test_fresh_runs_a_process_per_run_so_import_time_seeds_count(tmp_path):
    project = make_project(tmp_path, {"test_import.py": IMPORT_TIME},
                           ["test_import.py::test_reads_the_seed_at_import"])
    node = "test_import.py::test_reads_the_seed_at_import"
    in_process = measure(project, "--exact", "--runs", "4", "-o", "shared.json")
    fresh = measure(project, "--fresh", "--exact", "--runs", "4", "--workers", "2")
    assert in_process.returncode == fresh.returncode == 1, fresh.stderr
    # In process the module is imported once, with the first seed (9137 % 3 == 2).
    assert report(project, "shared.json")[node]["fails"] == 0
    assert report(project)[node]["fails"] == seeds_failing("seed % 3 == 0", 4) == 1
    # A run's time is its process's: an interpreter and a pytest started, not the test's
    # own fraction of a millisecond.
    summary = fresh.stderr.splitlines()[-1]
    assert float(summary.split(f"{node} (")[1].split(" ms a run")[0]) >= 20, summary
    assert "ms a run" in in_process.stderr.splitlines()[-1]


HANGS = """
    import time


    def test_hangs_on_some_seeds():
        if int(os.environ["PATCH_SEED"]) % 4 == 1:
            time.sleep(600)
"""


@pytest.mark.parametrize("mode", [
    (), pytest.param(("--fresh",), marks=pytest.mark.slow)], ids=["in-process", "fresh"])
def test_a_hung_run_is_stopped_by_the_timeout_and_counted_as_a_failure(tmp_path, mode):
    project = make_project(tmp_path, {"test_hang.py": HANGS},
                           ["test_hang.py::test_hangs_on_some_seeds"])
    began = time.monotonic()
    done = measure(project, *mode, "--exact", "--runs", "5", "--workers", "2",
                   "--timeout", "1.5")
    assert time.monotonic() - began < 60
    assert done.returncode == 1, done.stderr
    hung = seeds_failing("seed % 4 == 1", 5)
    assert report(project)["test_hang.py::test_hangs_on_some_seeds"]["fails"] == hung == 2
    timeouts = [line for line in done.stderr.splitlines() if line.startswith("TIMEOUT")]
    assert len(timeouts) == hung
    assert all("test_hang.py::test_hangs_on_some_seeds" in line for line in timeouts)


def test_without_a_terminal_one_line_per_target_then_a_summary(tmp_path):
    project = make_project(tmp_path, {"test_p.py": seed_test("test_a") + seed_test(
        "test_slow", body="import time\ntime.sleep(0.03)\n")}, ["test_p.py::test_a",
                                                                "test_p.py::test_slow"])
    done = measure(project, "--runs", "20", "--exact")
    *finished, summary = done.stderr.splitlines()
    assert sorted(line.split()[:2] for line in finished) == [
        ["stable", "test_p.py::test_a:"], ["stable", "test_p.py::test_slow:"]]
    assert all("0/20 failed, upper95=0.1611" in line for line in finished)
    assert summary.startswith("Measured 2 targets (2 stable): 40 runs in ")
    assert "Slowest: test_p.py::test_slow (" in summary
    assert "\x1b[" not in done.stderr


@pytest.mark.skipif(not os.access(PY38, os.X_OK), reason="no Python 3.8 at ~/.pyenv")
def test_measure_runs_on_python_3_8(tmp_path):
    if subprocess.run([str(PY38), "-c", "import pytest"], capture_output=True).returncode:
        pytest.skip("the Python 3.8 at ~/.pyenv has no pytest")
    project = make_project(tmp_path, {"test_s.py": seed_test("test_thirds", THIRDS)},
                           ["test_s.py::test_thirds"])
    done = measure(project, "--exact", "--runs", "30", python=str(PY38))
    assert done.returncode == 1, done.stderr
    assert report(project)["test_s.py::test_thirds"]["fails"] == seeds_failing(THIRDS, 30)


@pytest.fixture
def uploaded(run, suite, tmp_path):
    """measure --upload on a project with a stable and a broken test, against the live
    board: the finished process, and the stored report's measurements by node id."""
    make_project(tmp_path, {"test_up.py": seed_test("test_ok") + seed_test(
        "test_broken", "True")}, ["test_up.py::test_ok", "test_up.py::test_broken"])
    done = run("measure", "--runs", "30", "--upload", "--commit", "abc123", "--branch",
               "main", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", TODAY="2026-10-15")
    stored = Report.objects.filter(suite=suite).first()
    rows = {m.node.nodeid: m for m in stored.measurements.select_related("node")} \
        if stored else {}
    return done, stored, rows


def test_upload_sends_the_report_and_exits_with_the_boards_code(uploaded, tmp_path):
    done, stored, rows = uploaded
    assert done.returncode == 1, done.stderr
    assert "FAIL test_up.py::test_broken" in done.stdout
    assert done.stdout.rstrip().endswith("exit code 1")
    assert stored.commit == "abc123"
    assert (rows["test_up.py::test_broken"].n, rows["test_up.py::test_broken"].fails) == (3, 3)
    assert (rows["test_up.py::test_ok"].n, rows["test_up.py::test_ok"].fails) == (30, 0)
    # The file keeps the script's shape: no classification in it.
    assert json.loads((tmp_path / "flake-report.json").read_text())[0] == {
        "nodeid": "test_up.py::test_ok", "n": 30, "fails": 0, "upper95": 0.1135,
        "seed_base": SEED_BASE}


def test_upload_sends_each_targets_classification(uploaded):
    _, _, rows = uploaded
    assert rows["test_up.py::test_broken"].classification == "broken"
    assert rows["test_up.py::test_ok"].classification == "stable"


def test_upload_sends_what_an_order_dependent_target_depends_on(run, suite, tmp_path):
    make_project(tmp_path, {"test_a.py": "def test_sets():\n    os.environ['SET_UP'] = '1'\n",
                            "test_b.py": "def test_needs():\n    assert os.environ['SET_UP']\n"},
                 ["test_b.py::test_needs"])
    done = run("measure", "--runs", "6", "--upload", "--commit", "abc123",
               PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", TODAY="2026-10-15")
    assert done.returncode == 1, done.stderr
    [stored] = Measurement.objects.filter(report__suite=suite)
    assert (stored.classification, stored.cause) == ("order_dependent", {
        "role": "state_setter", "nodes": ["test_a.py::test_sets"], "complete": True})
    assert "passes only after test_a.py::test_sets (state-setter)" in done.stderr
