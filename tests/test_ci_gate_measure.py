"""`flakeboard_ci.py gate --measure`: after the one run, the selection's tier-2 nodes (the
board's tiers endpoint) measured with min_runs, 2 x or 4 x min_runs runs by the patch's
class, the report judged here or uploaded beside the batch, and one exit code: 1 when the
batch rejects or the report fails, else 2 when the batch holds, else 0."""

from __future__ import annotations

import json

import pytest

from ledger.models import Suite
from ledger.tiers import tier_rule_add
from runs.models import Report, VerdictBatch
from tests.helpers import quarantined
from tests.measure_projects import make_project, seed_test
from tests.test_ci_gate_diff import GIT_ENV, git

pytestmark = pytest.mark.slow  # each test starts a real process

MIN_RUNS = 5
PROPERTIES = "def test_sum():\n    assert 2 + 3 == 3 + 2\n"


@pytest.fixture
def project(tmp_path, suite):
    """Tier-0 properties and two tier-2 tests; a small min_runs and a budget five runs
    without a failure meet."""
    make_project(tmp_path, {"test_props.py": PROPERTIES,
                            "test_io.py": seed_test("test_retry") + seed_test("test_parse")})
    Suite.objects.filter(pk=suite.pk).update(min_runs=MIN_RUNS, max_upper_rate=0.5)
    tier_rule_add(suite=suite, glob="test_props.py::*", tier=0, actor="@lea")
    return tmp_path


@pytest.fixture
def gate(run):
    def run_gate(*args, **env):
        return run("gate", "--measure", *args, "-p", "no:cacheprovider",
                   PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PATCH_SEED="9137", **GIT_ENV, **env)

    return run_gate


def risky_commit(project, lines: int) -> None:
    """The project in git: its base, then a commit adding ``lines`` risky lines."""
    git(project, "init", "-q")
    git(project, "add", ".")
    git(project, "commit", "-q", "-m", "base")
    (project / "worker.py").write_text("".join(f"TIMEOUT_{i} = {i}\n" for i in range(lines)))
    git(project, "add", ".")
    git(project, "commit", "-q", "-m", "change")


@pytest.mark.parametrize(("risky", "patch_class", "runs"), [
    (0, "low", MIN_RUNS), (1, "medium", 2 * MIN_RUNS), (6, "high", 4 * MIN_RUNS),
])
def test_tier_2_nodes_run_the_classs_repeat_budget(gate, project, risky, patch_class, runs):
    risky_commit(project, risky)
    done = gate("all", "--diff", "HEAD~1", "--upload")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"MEASURE 2 tier-2 nodes, {runs} runs each ({patch_class} patch" in done.stdout
    report = Report.objects.get()
    measured = {m.node.nodeid: m.n for m in report.measurements.select_related("node")}
    assert measured == {"test_io.py::test_retry": runs, "test_io.py::test_parse": runs}
    assert report.selected_total == 3
    assert VerdictBatch.objects.get().patch_class == patch_class


def test_without_diff_the_low_budget_is_judged_here(gate, project):
    done = gate("all")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads((project / "flake-report.json").read_text())
    assert {row["nodeid"]: row["n"] for row in rows} == \
        {"test_io.py::test_retry": MIN_RUNS, "test_io.py::test_parse": MIN_RUNS}
    assert "OK   test_io.py::test_retry: upper95=" in done.stdout
    assert not Report.objects.exists()


def test_an_accepted_batch_with_a_failing_report_exits_1(gate, project):
    # Passes with the batch's PATCH_SEED 9137, fails with every even seed of the repeats.
    source = seed_test("test_retry", "seed % 2 == 0") + seed_test("test_parse")
    (project / "test_io.py").write_text("import os\n\n\n" + source)
    done = gate("all", "--upload")
    assert done.returncode == 1, done.stdout + done.stderr
    assert VerdictBatch.objects.get().verdict == "accept"
    assert Report.objects.get().exit_code == 1


def test_a_held_batch_with_a_passing_report_exits_2(gate, project):
    done = gate("all", "--fixtures", "fixtures-gone", "--upload")
    assert done.returncode == 2, done.stdout + done.stderr
    assert VerdictBatch.objects.get().verdict == "hold"
    assert Report.objects.get().exit_code == 0


def test_no_tier_2_node_selected_means_no_report(gate, project):
    done = gate("test_props.py", "--upload")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no tier-2 node was selected" in done.stdout
    assert not Report.objects.exists()


def test_a_pull_request_that_selects_one_test_is_judged_by_the_boards_test_set(
        gate, project, suite, today):
    """The share counts the board's own test set, not the one test the job selected: two
    entries among the board's 40 known nodes (and the selected one) are within a 5% cap."""
    quarantined(suite, today, {"tests/test_pay.py::test_a": 10, "tests/test_pay.py::test_b": 10})
    done = gate("all", "test_io.py::test_retry", "--upload")
    assert done.returncode == 0, done.stdout + done.stderr
    report = Report.objects.latest("pk")
    assert (report.status, report.selected_total, report.test_set_size) == ("OK", 1, 83)
    assert "quarantined share 2.4% of 83 known nodes (cap 5.0%; this run selected 1)" in \
        done.stdout
