"""A retry through the CI client (SPEC 2.4a): `gate` and `measure --upload` at a commit the
board has seen print the attempt number and the earlier attempt that decides the answer, in
every --format, and exit as the earlier failure says."""

from __future__ import annotations

import json

import pytest

from runs.models import Report, VerdictBatch
from tests.ci_client_view import load_client
from tests.measure_projects import make_project, seed_test

NODE = "test_io.py::test_retry"
FAILING = "def test_retry():\n    assert False\n"
PASSING = "def test_retry():\n    pass\n"


@pytest.fixture
def gate(run, tmp_path):
    def run_gate(source: str, *args: str, **env):
        make_project(tmp_path, {"test_io.py": source, "test_ok.py": "def test_ok():\n    pass\n"})
        return run("gate", "--upload", "--patch", "p-1", "--commit", "c1", *args, "-p",
                   "no:cacheprovider", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", **env)

    return run_gate


FORMATS = {  # --format and what it prints of the earlier attempt
    "text": lambda out, first: f"{NODE}: failed in attempt 1 ({first})" in out,
    "github": lambda out, first: f"::notice::{NODE}: failed in attempt 1 ({first})" in out,
    "gitlab": lambda out, first: f"{NODE}: failed in attempt 1 ({first})" in out,
    "markdown": lambda out, first: "failed in attempt 1" in out and "attempt 2 at this" in out,
    "json": lambda out, first: [r["attempts"] for r in json.loads(out)["records"]
                                if r["node"] == NODE] == [
        {"runs": 2, "failed_in": [1], "passed_in": [2], "infrastructure_in": []}],
}


@pytest.mark.slow
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_clean_rerun_of_the_gate_still_rejects_and_names_the_failed_attempt(gate, fmt):
    first = gate(FAILING)
    assert first.returncode == 1, first.stderr
    batch = VerdictBatch.objects.get()
    first_url = f"/suites/acme/verdicts/{batch.pk}/"

    again = gate(PASSING, "--format", fmt)

    assert again.returncode == 1, again.stderr
    printed = again.stdout
    url = next(word.strip("()") for word in printed.replace("\\", "").split()
               if first_url in word) if fmt != "json" else first_url
    assert FORMATS[fmt](printed, url), printed
    if fmt in ("text", "github", "gitlab"):
        assert "attempt 2 at this patch and commit" in printed
        assert "a retry will not change the verdict" in printed
    assert [b.verdict for b in VerdictBatch.objects.order_by("attempt")] == ["reject", "reject"]


@pytest.mark.slow
def test_a_first_attempt_prints_no_attempt_line(gate):
    done = gate(PASSING)
    assert done.returncode == 0, done.stderr
    assert "attempt" not in done.stdout


@pytest.fixture
def measure_at(run, tmp_path):
    """measure --upload of one seed-driven target at commit c1, from a seed base."""
    make_project(tmp_path, {"test_m.py": seed_test("test_rare", "seed < 9")},
                 ["test_m.py::test_rare"])

    def measure(seed_base: int):
        return run("measure", "--runs", "200", "--seed-base", str(seed_base), "--upload",
                   "--commit", "c1", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")

    return measure


@pytest.mark.slow
def test_a_lucky_second_measurement_still_fails_and_names_the_first(measure_at):
    first = measure_at(0)
    assert first.returncode == 1, first.stderr
    report = Report.objects.get()

    lucky = measure_at(1000)

    assert lucky.returncode == 1, lucky.stderr
    second = Report.objects.exclude(pk=report.pk).get()
    measured = second.measurements.get()
    assert (measured.fails, measured.status, measured.reason) == (0, "FAIL", "over_budget")
    assert "attempt 2 at this commit" in lucky.stdout
    assert ("test_m.py::test_rare: pooled with the earlier measurements at this commit "
            "(attempt 1: ") in lucky.stdout
    assert f"/suites/acme/reports/{report.pk}/" in lucky.stdout
    first_row = report.measurements.get()
    assert f"{first_row.fails}/{first_row.n + 200} failed" in lucky.stdout, lucky.stdout


GITHUB = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "acme/pay",
          "GITHUB_RUN_ID": "88213"}


@pytest.mark.parametrize(("environ", "evidence"), [
    ({**GITHUB, "GITHUB_RUN_ATTEMPT": "2"},
     "https://github.com/acme/pay/actions/runs/88213/attempts/2"),
    ({**GITHUB, "GITHUB_RUN_ATTEMPT": "1"},
     "https://github.com/acme/pay/actions/runs/88213/attempts/1"),
    (GITHUB, "https://github.com/acme/pay/actions/runs/88213"),  # no attempt said
    # GitLab's job URL ends in CI_JOB_ID, which a retried job gets anew.
    ({"CI_JOB_URL": "https://gitlab.com/acme/pay/-/jobs/4410", "CI_JOB_ID": "4410"},
     "https://gitlab.com/acme/pay/-/jobs/4410"),
    ({"CI_SERVER_URL": "https://gitlab.example", "CI_PROJECT_PATH": "acme/pay",
      "CI_JOB_ID": "4411"}, "https://gitlab.example/acme/pay/-/jobs/4411"),
    ({}, ""),
])
def test_the_evidence_names_the_ci_runs_attempt(environ, evidence):
    assert load_client().ci_run_url(environ) == evidence


@pytest.mark.slow
def test_a_rerun_of_a_github_job_is_a_new_attempt_not_a_replay(gate):
    """GitHub's "Re-run failed jobs" keeps the run's id and counts its attempt: the second
    upload is attempt 2, judged with the first, not the first's stored answer."""
    first = gate(PASSING, **GITHUB, GITHUB_RUN_ATTEMPT="1")
    assert first.returncode == 0, first.stderr
    again = gate(PASSING, **GITHUB, GITHUB_RUN_ATTEMPT="2")
    assert again.returncode == 0, again.stderr
    assert "attempt 2 at this patch and commit" in again.stdout
    assert "uploaded before" not in again.stdout
    assert [b.evidence for b in VerdictBatch.objects.order_by("attempt")] == [
        "https://github.com/acme/pay/actions/runs/88213/attempts/1",
        "https://github.com/acme/pay/actions/runs/88213/attempts/2"]
