"""Every failure of a pull request's gate explained (SPEC 2.4c): under each failed node the
gate prints the board's line (quarantined, known flaky, also failing on the default branch,
or a new failure), in every format; after --measure, the gate's own measurement of the node
confirms or corrects it (a node measured broken is not known flaky)."""

from __future__ import annotations

import json

import pytest

from junit.ingest import junit_ingest
from junit.models import CaseResult
from tests.ci_client_view import markdown_tables, workflow_commands
from tests.junit_files import junit_xml
from tests.test_ci_gate_measure import gate  # noqa: F401 - a fixture
from tests.test_ci_gate_plan import project  # noqa: F401 - a fixture

pytestmark = pytest.mark.slow

BROKEN = "test_c.py::test_broken"
NEW = ("new failure: it passes on the default branch and no flaky evidence, so probably "
       "caused by this change")
FLAKY = "known flaky: rate 50.0% (≤ 90.5% at 95%) since "
MEASURED_BROKEN = ("new failure: no result of it on the default branch; its flaky past does "
                   "not explain failing every run, so probably caused by this change; "
                   "measured broken here")


def junit(suite, *outcomes, branch):
    junit_ingest(suite=suite, body=junit_xml(*(("test_c", "test_broken", outcome)
                                               for outcome in outcomes)),
                 actor="ci", query={"commit": "d1", "branch": branch, "job": "py3.12"})
    assert CaseResult.objects.filter(node__nodeid=BROKEN).exists()


@pytest.fixture
def passed_on_main(project, suite):  # noqa: F811
    junit(suite, "passed", branch="main")
    return project


@pytest.fixture
def flaky_elsewhere(project, suite):  # noqa: F811
    # Failed, rerun and passed in one job of a feature branch: 1 flaky failure in 2 runs.
    junit(suite, "failed", "passed", branch="feature/x")
    return project


def under(out: str, line_start: str) -> str:
    """The line printed under the first line that starts with ``line_start``."""
    lines = out.splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith(line_start))
    return lines[index + 1]


def test_a_test_that_passed_on_the_default_branch_is_a_new_failure_measured_broken(
        gate, passed_on_main):  # noqa: F811
    done = gate("--diff", "HEAD~1", "--commit", "pr-1", "--upload")
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert under(out, f"REJECT {BROKEN}: property_fail") == f"    {NEW}"
    assert under(out, f"FAIL {BROKEN}: over_budget") == f"    {NEW}; measured broken here"
    assert out.count("new failure") == 2  # the failed node alone is explained


def test_a_test_with_flaky_evidence_is_known_flaky_until_measured_broken(
        gate, flaky_elsewhere, today):  # noqa: F811
    done = gate("--diff", "HEAD~1", "--commit", "pr-1", "--upload")
    out = done.stdout
    assert under(out, f"REJECT {BROKEN}: property_fail") == f"    {FLAKY}{today}"
    assert under(out, f"FAIL {BROKEN}: over_budget") == f"    {MEASURED_BROKEN}"


def test_json_keeps_the_failure_on_the_row_and_the_reports_corrects_it(
        gate, flaky_elsewhere, today):  # noqa: F811
    done = gate("--diff", "HEAD~1", "--commit", "pr-1", "--upload", "--format", "json")
    batch, report = (json.loads(line) for line in done.stdout.splitlines()[-2:])
    failures = {row["node"]: row["failure"] for row in batch["records"]}
    assert failures[BROKEN]["label"] == "known_flaky"
    assert failures[BROKEN]["evidence"]["flaky"] == {
        "rate": 0.5, "upper95": 0.9055, "since": today.isoformat(), "diagnosis": ""}
    assert [node for node, failure in failures.items() if failure] == [BROKEN]
    measured = {m["nodeid"]: m.get("failure") for m in report["measurements"]}
    assert measured[BROKEN]["label"] == "new_failure"
    assert measured[BROKEN]["measured"] == "broken"
    assert measured[BROKEN]["line"] == MEASURED_BROKEN
    assert measured["test_pr.py::test_stable"] is None


def test_a_gate_that_judges_here_asks_the_board(gate, passed_on_main):  # noqa: F811
    done = gate("--diff", "HEAD~1", "--commit", "pr-1")
    out = done.stdout
    assert "nothing was uploaded" in out
    assert under(out, f"REJECT {BROKEN}: property_fail") == f"    {NEW}"
    assert under(out, f"FAIL {BROKEN}: upper95=1.0") == f"    {NEW}; measured broken here"


def test_github_annotates_and_summarises_the_line(gate, passed_on_main, tmp_path):  # noqa: F811
    summary = tmp_path / "summary.md"
    done = gate("--diff", "HEAD~1", "--commit", "pr-1", "--upload",
                GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(summary))
    errors = [c for c in workflow_commands(done.stdout)
              if c[0] == "error" and c[1]["file"] == "test_c.py"]
    (batch, explained), (report, corrected) = (message.split("\n") for _, _, message in errors)
    assert (batch, explained) == (f"REJECT {BROKEN}: property_fail", f"    {NEW}")
    assert report.startswith(f"FAIL {BROKEN}: over_budget (")
    assert corrected == f"    {NEW}; measured broken here"
    batch_rows = markdown_tables(summary.read_text())[1]
    assert batch_rows[0][:3] == [BROKEN, "REJECT", f"property_fail \u2014 {NEW}"]
