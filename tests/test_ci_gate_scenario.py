"""gate --measure on a pull request at real size (bench/pr_scenario.py): 500 tier-2 tests in
20 files run under pytest-xdist, one broken; the pull request adds two tests (one failing a
quarter of its seeds) and edits one file. The gate measures exactly the failed test, the
two new ones and the edited file's tests, fails the flaky new one as new_test_flaky, and
leaves the rest to the nightly measure."""

from __future__ import annotations

import pytest

from bench.pr_scenario import FILES, NEW_FLAKY, PER_FILE, make_scenario
from junit.ingest import junit_ingest
from ledger.models import Suite
from runs.ingest import signals_ingest
from runs.models import Report
from tests.helpers import body, record
from tests.junit_files import junit_xml
from tests.measure_projects import seeds_failing
from tests.test_ci_gate_measure import gate  # noqa: F401 - a fixture

pytest.importorskip("xdist")  # the project's plugin, from this environment

# One block of runs a node (B6d runs the suite's default, 200: two blocks).
MIN_RUNS = 100


@pytest.mark.slow
def test_a_pull_request_at_real_size(gate, tmp_path, suite):  # noqa: F811
    scenario = make_scenario(tmp_path)
    assert len(scenario.known) == FILES * PER_FILE == 500
    Suite.objects.filter(pk=suite.pk).update(min_runs=MIN_RUNS)
    signals_ingest(suite=suite, body=body([record(node) for node in scenario.known]),
                   actor="ci", query={"commit": "base", "patch": "main"})
    # The default branch's CI ran the broken test's file, and it passed there.
    path, name = scenario.broken.split("::")
    junit_ingest(suite=suite, body=junit_xml((path.removesuffix(".py").replace("/", "."),
                                              name, "passed")),
                 actor="ci", query={"commit": "base", "branch": "main", "job": "test"})
    done = gate("--diff", "HEAD~1", "--commit", "pr-1", "--upload")
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    planned = {scenario.broken, *scenario.new, *scenario.edited}
    assert len(planned) == 28
    report = Report.objects.get()
    judged = {m.node.nodeid: (m.status, m.reason, m.n)
              for m in report.measurements.select_related("node")}
    assert set(judged) == planned
    flaky = scenario.new[1]
    assert seeds_failing(NEW_FLAKY, judged[flaky][2]) > 0
    assert judged[flaky][:2] == ("FAIL", "new_test_flaky")
    assert judged[scenario.new[0]][0] == "OK"
    assert {judged[node][2] for node in scenario.edited} == {MIN_RUNS}
    assert judged[scenario.broken][:2] == ("FAIL", "over_budget")
    assert f"of 502 selected: 1 failed in this run, 2 new, {PER_FILE} test file changed" in out
    assert (f"NIGHTLY: {502 - len(planned)} tier-2 nodes ran once here and were not "
            f"measured") in out
    assert "NOT MEASURED" not in out
    # Its failure is explained: it passed on the default branch, so this change broke it,
    # and the gate's measurement says it fails every run.
    new_failure = ("new failure: it passes on the default branch and no flaky evidence, so "
                   "probably caused by this change")
    lines = out.splitlines()
    explained = [lines[index + 1].strip() for index, line in enumerate(lines)
                 if line.startswith(("REJECT ", "FAIL ")) and scenario.broken in line]
    assert explained == [new_failure, f"{new_failure}; measured broken here"]
