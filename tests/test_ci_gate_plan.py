"""`gate --measure` measures what the patch needs (SPEC 2.4c): on a pull request that adds
two tests and edits one test file, the failed nodes, the two new ones and that file's
tests, each line saying why, and it says how many tier-2 nodes it left to the nightly
measure; `--measure-budget` names what the budget left out."""

from __future__ import annotations

import json
import os

import pytest

from ledger.measure_targets import measure_target_set
from ledger.models import Suite
from ledger.settings_services import measure_budget_set, new_tests_set
from runs.ingest import signals_ingest
from runs.models import Report
from tests.helpers import body, record
from tests.measure_projects import make_project, seed_test, seeds_failing
from tests.test_ci_gate_diff import git
from tests.test_ci_gate_measure import gate  # noqa: F401 - a fixture

pytestmark = pytest.mark.slow  # each test starts a real process

MIN_RUNS, GUARD_RUNS = 10, 8
FILES = ("test_a.py", "test_b.py", "test_c.py", "test_d.py")
# The failed test sleeps, so that its cost (its time in the run x its runs) is known to be
# at least 10 x 0.05 s.
BROKEN = seed_test("test_broken", "True", body="import time\ntime.sleep(0.05)\n")
NEW_FLAKY = "seed % 4 == 0"  # a quarter of the seeds; the gate's own, 9137, passes


def existing(path):
    return [f"{path}::test_{i}" for i in range(5)]


@pytest.fixture
def project(tmp_path, suite):
    """Twenty tier-2 tests in four files the board knows, one of them broken, committed;
    then a pull request adding test_pr.py (one stable test, one failing a quarter of its
    seeds) and editing test_b.py."""
    return pull_request(tmp_path, suite)


def pull_request(tmp_path, suite, base=None):
    """The project fixture's, with the ``base`` modules (path -> source) in its base."""
    modules = {path: "".join(seed_test(node.split("::")[1]) for node in existing(path))
               for path in FILES}
    modules["test_c.py"] += BROKEN
    make_project(tmp_path, {**modules, **(base or {})})
    Suite.objects.filter(pk=suite.pk).update(min_runs=MIN_RUNS, max_upper_rate=0.5)
    new_tests_set(suite=suite, actor="@lea", runs=GUARD_RUNS, share=0.3)
    known = [node for path in FILES for node in existing(path)] + ["test_c.py::test_broken"]
    signals_ingest(suite=suite, body=body([record(node) for node in known]), actor="ci",
                   query={"commit": "base", "patch": "main"})
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    (tmp_path / "test_pr.py").write_text(
        "import os\n\n\n" + seed_test("test_stable") + seed_test("test_flaky", NEW_FLAKY))
    with (tmp_path / "test_b.py").open("a") as handle:
        handle.write("# an edit\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "pull request")
    return tmp_path



def unsaid(out: str, lines: list[str]) -> list[str]:
    """Those of ``lines`` that ``out`` does not hold."""
    return [line for line in lines if line not in out]

def test_a_pull_request_measures_the_failed_the_new_and_the_edited_files_tests(
        gate, project):  # noqa: F811
    done = gate("--diff", "HEAD~1", "--commit", "pr-1", "--upload")
    assert done.returncode == 1, done.stdout + done.stderr
    report = Report.objects.get()
    judged = {m.node.nodeid: (m.status, m.reason, m.n)
              for m in report.measurements.select_related("node")}
    assert set(judged) == {"test_c.py::test_broken", "test_pr.py::test_stable",
                           "test_pr.py::test_flaky", *existing("test_b.py")}
    assert seeds_failing(NEW_FLAKY, GUARD_RUNS) > 0
    assert judged["test_pr.py::test_flaky"][:2] == ("FAIL", "new_test_flaky")
    # Broken, not flaky: every run fails (the early stop ends it once it cannot pass).
    status, reason, n = judged["test_c.py::test_broken"]
    assert (status, reason) == ("FAIL", "over_budget")
    assert report.measurements.get(node__nodeid="test_c.py::test_broken").fails == n
    assert judged["test_b.py::test_0"][2] == MIN_RUNS
    assert unsaid(done.stdout, [
        "MEASURE 8 tier-2 nodes, 10 runs each (low patch",
        "of 23 selected: 1 failed in this run, 2 new, 5 test file changed",
        "  test_c.py::test_broken: 10 runs, failed in this run",
        "  test_b.py::test_3: 10 runs, test file changed",
        "  test_pr.py::test_flaky: 8 runs, new",
        "NIGHTLY: 15 tier-2 nodes ran once here and were not measured: their standing "
        "evidence is the ledger and the nightly measure",
        # The board's answer, as printed, says why each was measured.
        "FAIL test_c.py::test_broken: over_budget (",
        "; measured: failed in this run",
    ]) == []
    assert "NOT MEASURED" not in done.stdout


def test_json_carries_the_plan_and_each_rows_why(gate, project):  # noqa: F811
    done = gate("--diff", "HEAD~1", "--commit", "pr-1", "--upload", "--format", "json")
    answer = json.loads(done.stdout.splitlines()[-1])
    because = {m["nodeid"]: m["measured_because"] for m in answer["measurements"]}
    assert because["test_c.py::test_broken"] == "failed in this run"
    assert because["test_pr.py::test_stable"] == "new"
    assert because["test_b.py::test_0"] == "test file changed"
    assert answer["plan"]["left_to_nightly"] == 15
    assert answer["plan"]["not_measured_budget"] == []


def test_a_target_is_measured_as_flaky_prone_within_the_suites_budget(
        gate, project, suite):  # noqa: F811
    measure_target_set(suite=suite, nodeid="test_d.py::test_2", actor="@lea", marked=True)
    measure_budget_set(suite=suite, actor="@lea", seconds=7)
    done = gate("--diff", "HEAD~1", "--commit", "pr-1", "--upload")
    assert "(budget 7 s, about " in done.stdout
    assert "  test_d.py::test_2: 10 runs, flaky in the last 30 days" in done.stdout
    assert "test_d.py::test_2" in {m.node.nodeid for m in
                                   Report.objects.get().measurements.select_related("node")}


def test_the_budget_names_what_it_left_out(gate, project):  # noqa: F811
    # The broken test alone costs at least 0.5 s: it starts, and nothing after it.
    done = gate("--diff", "HEAD~1", "--commit", "pr-1", "--upload", "--measure-budget", "0.1")
    assert unsaid(done.stdout, [
        "NOT MEASURED (budget) test_pr.py::test_stable: new",
        "NOT MEASURED (budget) test_b.py::test_4: test file changed",
        "BUDGET: new: 0 of 2 measured, the group was cut short",
        "BUDGET: test file changed: 0 of 5 measured",
        "NIGHTLY: 22 tier-2 nodes ran once here and were not measured",
    ]) == []
    measured = [m.node.nodeid for m in Report.objects.get().measurements.select_related("node")]
    assert measured == ["test_c.py::test_broken"]


def test_measure_all_measures_every_selected_tier_2_node(gate, project):  # noqa: F811
    done = gate("all", "--commit", "pr-1")
    assert "MEASURE 23 tier-2 nodes" in done.stdout
    assert "(no budget)" in done.stdout
    assert len(json.loads((project / "flake-report.json").read_text())) == 23


# Every pytest process of this project takes 2 s to start: gate's run pays it once, so each
# node's time in it (and the plan's estimate) is short, but each of measure's processes
# pays it before its first run.
SLOW_START = {"conftest.py": "import time\n\ntime.sleep(2)\n"}


@pytest.mark.skipif((os.cpu_count() or 1) > 8, reason="measure's workers, one a CPU, would "
                    "start all eight blocks at once")
def test_the_budget_holds_in_real_time(gate, tmp_path, suite):  # noqa: F811
    pull_request(tmp_path, suite, SLOW_START)
    planned = {"test_c.py::test_broken", "test_pr.py::test_stable", "test_pr.py::test_flaky",
               *existing("test_b.py")}
    done = gate("--diff", "HEAD~1", "--commit", "pr-1", "--upload", "--measure-budget", "1.5")
    out = done.stdout
    # The estimate fits all eight (about 1.3 s) ...
    assert "MEASURE 8 tier-2 nodes" in out, out + done.stderr
    assert "(budget 1.5 s, about " in out
    assert "BUDGET: " not in out.split("NIGHTLY:")[0]
    # ... but the processes started when measuring began (gate's collection of every
    # target's file, and one block a further worker: fewer than eight) outlast the budget:
    # no other block started, and each node left without a run is named.
    left_out = {line.split(" ")[3].rstrip(":") for line in out.splitlines()
                if line.startswith("NOT MEASURED (budget) ")}
    assert "test_b.py::test_4" in left_out
    assert ("NOT MEASURED (budget) test_b.py::test_4: test file changed; the budget of 1.5 s "
            "ran out before its runs started") in out
    measured = {m.node.nodeid: m.n for m in
                Report.objects.get().measurements.select_related("node")}
    # The failed node's block is the first: it always starts, and it finished.
    assert "test_c.py::test_broken" in measured
    assert (f"BUDGET: {len(left_out)} tier-2 node{'s' * (len(left_out) != 1)} of the plan "
            f"got no run before the budget "
            f"of 1.5 s ran out; left to the nightly measure with the others: "
            f"{15 + len(left_out)} tier-2 nodes in all") in out
    assert set(measured) | left_out == planned
    assert not set(measured) & left_out
    assert all(n > 0 for n in measured.values())
    rows = {row["nodeid"] for row in json.loads((tmp_path / "flake-report.json").read_text())}
    assert rows == set(measured)
