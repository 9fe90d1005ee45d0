"""The CI client's junit command against a live board: each file uploaded gzip-compressed,
its summary and the newly flaky tests printed, exit 0 whatever it found (evidence, not a
gate), 4 naming the file the board refused, 64 for a file it cannot read."""

from __future__ import annotations

import json

import pytest

from junit.models import JUnitFile
from tests.ci_client_view import workflow_commands
from tests.junit_files import CORPUS

pytestmark = pytest.mark.slow  # each test starts a real process

RERUNS = str(CORPUS / "pytest-rerunfailures-xunit2.xml")
JEST = str(CORPUS / "jest-junit.xml")
FLAKY = ["tests/test_payments.py::TestCurrency::test_format[JPY]",
         "tests/test_payments.py::test_settles_within_deadline"]


def test_files_are_stored_and_the_newly_flaky_tests_printed(run, suite):
    done = run("junit", RERUNS, JEST, "--commit", "9f3c2a1", "--job", "py3.12",
               "--format", "text")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (f"{RERUNS}: 10 tests: 7 passed, 1 failed, 1 error, 1 skipped; "
                        "7 reruns. 2 tests newly flaky on commit 9f3c2a1 (job py3.12). "
                        "It names no branch, so it does not size the test set (only main's "
                        "runs do: give the branch).")
    assert lines[1].startswith(f"{JEST}: ")
    assert [line for line in lines if line.startswith("FLAKY ")] == [
        f"FLAKY {node}" for node in FLAKY]
    assert lines[-1] == "2 files stored; 2 tests newly flaky on 9f3c2a1."
    files = JUnitFile.objects.filter(suite=suite)
    assert (files.count(), set(files.values_list("job", flat=True))) == (2, {"py3.12"})
    again = run("junit", RERUNS, "--commit", "9f3c2a1", "--job", "py3.12", "--format", "text")
    # The same file again is stored once, and answers what it answered then.
    assert "(uploaded before: the stored result)" in again.stdout
    assert again.stdout.splitlines()[-1] == "1 file stored; 2 tests newly flaky on 9f3c2a1."
    assert files.count() == 2


def test_json_is_the_boards_answers(run):
    done = run("junit", RERUNS, "--commit", "abc", "--format", "json")
    assert done.returncode == 0, done.stderr
    [answer] = json.loads(done.stdout)
    assert (answer["commit"], answer["newly_flaky_count"]) == ("abc", 2)


def test_github_warns_on_each_newly_flaky_test_and_writes_the_summary(run, tmp_path):
    summary = tmp_path / "summary.md"
    done = run("junit", RERUNS, "--commit", "abc", GITHUB_ACTIONS="true",
               GITHUB_STEP_SUMMARY=str(summary))
    assert done.returncode == 0, done.stderr
    warnings = [(props, message) for name, props, message in workflow_commands(done.stdout)
                if name == "warning"]
    assert [props["file"] for props, _ in warnings] == ["tests/test_payments.py"] * 2
    assert [message for _, message in warnings] == [
        f"{node} passed and failed in one job on abc" for node in FLAKY]
    assert summary.read_text().startswith("### Flakeboard: 2 tests newly flaky on `abc`")


def test_a_refused_file_is_named_and_exits_4(run, suite, tmp_path):
    broken = tmp_path / "broken.xml"
    broken.write_text("<testsuite><testcase name='a'>")
    done = run("junit", RERUNS, str(broken), "--commit", "abc")
    assert done.returncode == 4
    assert f"{broken} was not stored (1 file(s) before it were)" in done.stderr
    assert "line" in done.stderr  # the board says where the XML breaks
    assert JUnitFile.objects.filter(suite=suite).count() == 1


def test_a_missing_file_uploads_nothing(run, suite, tmp_path):
    done = run("junit", RERUNS, str(tmp_path / "nope.xml"), "--commit", "abc")
    assert done.returncode == 64
    assert "cannot read" in done.stderr
    assert not JUnitFile.objects.filter(suite=suite).exists()


@pytest.mark.parametrize(("env", "branch"), [
    ({"GITHUB_HEAD_REF": "feature/x", "GITHUB_REF_NAME": "12/merge",
      "GITHUB_REF_TYPE": "branch"}, "feature/x"),  # a pull request's own branch
    ({"GITHUB_HEAD_REF": "", "GITHUB_REF_NAME": "main", "GITHUB_REF_TYPE": "branch"}, "main"),
    ({"GITHUB_REF_NAME": "v1.0", "GITHUB_REF_TYPE": "tag"}, ""),
    ({"CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": "mr", "CI_COMMIT_BRANCH": "main"}, "mr"),
    ({"CI_COMMIT_BRANCH": "main"}, "main"),
    ({"BUILDKITE_BRANCH": "trunk"}, "trunk"),
    ({}, ""),
])
def test_the_branch_defaults_to_the_one_ci_names(run, suite, env, branch):
    """The test set counts the default branch's JUnit: a job that forgets --branch still
    says which branch it ran on, as its CI names it; --branch wins."""
    done = run("junit", RERUNS, "--commit", "c1", "--job", "py3.12", "--format", "text", **env)
    assert done.returncode == 0, done.stderr
    assert JUnitFile.objects.get(suite=suite).branch == branch
    given = run("junit", RERUNS, "--commit", "c2", "--branch", "release", **env)
    assert given.returncode == 0, given.stderr
    assert JUnitFile.objects.get(suite=suite, commit="c2").branch == "release"
