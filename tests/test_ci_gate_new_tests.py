"""`gate --measure --commit` measures new tests at birth (docs/new-tests.md): the board says
which selected tier-2 nodes are new at the commit, the guard runs each up to 30 times
(fewer when slow), and the report FAILs a test flaky from the day it was written."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakeboard import rules
from ledger.settings_services import new_tests_set
from ledger.tiers import tier_rule_add
from runs.ingest import signals_ingest
from runs.models import Report
from tests.ci_client_view import load_client
from tests.helpers import body, record
from tests.measure_projects import make_project, seed_test
from tests.properties import PROPERTY
from tests.test_ci_gate_measure import gate  # noqa: F401 - a fixture

CLIENT = load_client()
EXISTING = [f"test_io.py::test_{i}" for i in range(10)]
STABLE, FLAKY, BROKEN = (f"test_pr.py::test_{name}" for name in ("stable", "flaky", "broken"))


@pytest.fixture
def project(tmp_path, suite):
    """Ten tests the board knows (tier 1: run once by gate, never measured), and a pull
    request adding three: one stable, one failing a fifth of its runs (every seed a
    multiple of 5; the gate's own seed 9137 passes), one always failing."""
    make_project(tmp_path, {
        "test_io.py": "".join(seed_test(node.split("::")[1]) for node in EXISTING),
        "test_pr.py": seed_test("test_stable") + seed_test("test_flaky", "seed % 5 == 0")
                      + seed_test("test_broken", "True"),
    })
    tier_rule_add(suite=suite, glob="test_io.py::*", tier=1, actor="@lea")
    signals_ingest(suite=suite, body=body([record(node) for node in EXISTING]), actor="ci",
                   query={"commit": "base", "patch": "main"})
    return tmp_path


@pytest.mark.slow
def test_a_pull_request_adding_three_tests(gate, project):  # noqa: F811
    done = gate("--commit", "pr-1", "--upload")
    assert done.returncode == 1, done.stdout + done.stderr  # a FAILed report (and a reject)
    assert "NEW 3 tier-2 nodes new at pr-1" in done.stdout
    assert f"NEW {STABLE}: new: 0/30 failed, rate ≤ 11.4% at 95%" in done.stdout
    report = Report.objects.get()
    judged = {m.node.nodeid: (m.status, m.reason, m.n)
              for m in report.measurements.select_related("node")}
    # The existing tests are not measured again: only the three new ones are in the report.
    assert set(judged) == {STABLE, FLAKY, BROKEN}
    assert judged[STABLE] == ("OK", "new_test_clean", 30)
    assert judged[FLAKY][:2] == ("FAIL", "new_test_flaky")
    assert judged[BROKEN][:2] == ("FAIL", "over_budget")  # an ordinary failure
    assert (report.status, report.reason) == ("FAIL", "new_test_flaky")
    # The board's answer, as the client prints it, names them with what their runs bound.
    n, fails = judged[FLAKY][2], report.measurements.get(node__nodeid=FLAKY).fails
    assert (f"FAIL {FLAKY}: new_test_flaky ({rules.birth_sentence(n, fails)})"
            in done.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("output", ["github", "gitlab", "markdown"])
def test_every_output_names_the_new_tests(gate, project, output):  # noqa: F811
    done = gate("--commit", "pr-1", "--upload", "--format", output)
    assert done.returncode == 1, done.stdout + done.stderr
    if output == "markdown":
        assert (r"| test\_pr\.py\:\:test\_flaky | FAIL | new\_test\_flaky\; measured\: new |"
                in done.stdout)
    else:
        assert f"{FLAKY}: new_test_flaky (new: " in done.stdout
        assert "; measured: new" in done.stdout


@pytest.mark.slow
def test_judged_here_without_upload(gate, project):  # noqa: F811
    done = gate("--commit", "pr-1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert (f"OK   {STABLE}: new: 0/30 failed, rate ≤ 11.4% at 95%; not a budget claim "
            "(new_test_clean)") in done.stdout
    assert f"FAIL {FLAKY}: flaky at birth, new: " in done.stdout
    rows = json.loads((project / "flake-report.json").read_text())
    # The report keeps the script's shape: the guard's mark travels in the upload only.
    assert {row["nodeid"] for row in rows} == {STABLE, FLAKY, BROKEN}
    assert all(set(row) == {"nodeid", "n", "fails", "upper95", "seed_base"} for row in rows)


@pytest.mark.slow
def test_without_a_commit_nothing_is_new(gate, project):  # noqa: F811
    done = gate("all", "test_pr.py::test_stable")
    assert "NEW" not in done.stdout
    assert "MEASURE 1 tier-2 node, 200 runs each" in done.stdout


@pytest.mark.slow
def test_when_most_of_the_selection_is_new_the_first_ones_are_measured(gate, project):  # noqa: F811
    # Only the PR's file and one old test are selected: 3 of 4 new, over 30%.
    done = gate("test_pr.py", EXISTING[0], "--commit", "pr-1", "--upload")
    assert ("NEW: 3 of the 4 selected tests are new, over 30%: the guard measures the "
            "first 1; the others ran once") in done.stdout
    measured = [m.node.nodeid for m in Report.objects.get().measurements.select_related("node")]
    assert measured == [STABLE]


@pytest.mark.slow
def test_the_suites_guard_numbers_decide_the_runs_and_the_share(gate, project, suite):  # noqa: F811
    new_tests_set(suite=suite, actor="@lea", runs=8, share=0.8)
    done = gate("test_pr.py", EXISTING[0], "--commit", "pr-1", "--upload")
    assert "the guard runs each up to 8 times" in done.stdout
    assert "over 80%" not in done.stdout  # 3 of 4 is within 80%: all three are measured
    runs = {m.node.nodeid: m.n for m in Report.objects.get().measurements.select_related("node")}
    assert runs[STABLE] == 8 and set(runs) == {STABLE, FLAKY, BROKEN}
    assert f"NEW {STABLE}: new: 0/8 failed, rate ≤ 32.4% at 95%" in done.stdout


# Each run of a test with this body writes its process id and its name (gate's run, measure's
# workers).
PID_LOG = """with open(os.environ["PID_LOG"], "a") as out:
    out.write(f"{os.getpid()} {os.environ['PYTEST_CURRENT_TEST'].split(' ')[0]}\\n")
"""


@pytest.mark.slow
def test_the_new_tests_of_a_file_share_the_guards_processes(gate, project, suite,  # noqa: F811
                                                            tmp_path):
    """Twelve new tests of one file: at most one process per worker runs them, not one
    each, and gate's own run was their check in order (no process of its own)."""
    new_tests_set(suite=suite, actor="@lea", runs=30, share=1.0)  # every one measured
    (project / "test_pr.py").write_text("import os\n\n\n" + "".join(
        seed_test(f"test_new_{i}", body=PID_LOG) for i in range(12)))
    log = tmp_path / "pids.log"
    done = gate("test_pr.py", "--commit", "pr-9", PID_LOG=str(log))
    assert "NEW 12 tier-2 nodes new at pr-9" in done.stdout, done.stdout + done.stderr
    ran = {}
    for line in log.read_text().splitlines():
        pid, node = line.split(" ", 1)
        ran.setdefault(node, []).append(pid)
    # Gate's run, then the guard's 30: no check after the module's tests ran it again.
    assert len(ran) == 12 and all(len(pids) == 31 for pids in ran.values())
    gates = {pids[0] for pids in ran.values()}
    guards = {pid for pids in ran.values() for pid in pids[1:]}
    assert len(gates) == 1 and not gates & guards
    assert len(guards) <= min(os.cpu_count() or 1, 11)  # one a worker, not one a test


@pytest.mark.parametrize(("seconds", "runs"), [
    (None, 30), (0.001, 30), (2.0, 30), (10.0, 6), (20.0, 3), (300.0, 3),
])
def test_a_slow_new_test_gets_fewer_runs(seconds, runs):
    assert CLIENT.guard_runs(seconds) == runs
    assert CLIENT.guard_runs(seconds, 10) == min(runs, 10)


@PROPERTY
@given(n=st.integers(min_value=1, max_value=10_000), data=st.data())
def test_the_bound_the_client_prints_is_the_rules_wilson_bound(n, data):
    fails = data.draw(st.integers(min_value=0, max_value=n))
    assert CLIENT.birth_sentence(n, fails) == rules.birth_sentence(n, fails)
