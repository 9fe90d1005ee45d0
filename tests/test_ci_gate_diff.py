"""`flakeboard_ci.py gate --diff RANGE`: the patch's class from the added lines of its
changed source files that touch concurrency or time. Fixed diffs kept with the tests
(tests/corpus/diffs/) give fixed counts and classes; a real git repository gives the
same through git; the class and its count are stored on the batch and shown on its page."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from runs.models import VerdictBatch
from tests.ci_client_view import load_client
from tests.measure_projects import make_project

client = load_client()
DIFFS = Path(__file__).parent / "corpus" / "diffs"
GIT_ENV = {"GIT_AUTHOR_NAME": "ci", "GIT_AUTHOR_EMAIL": "ci@example.com",
           "GIT_COMMITTER_NAME": "ci", "GIT_COMMITTER_EMAIL": "ci@example.com",
           "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}


@pytest.mark.parametrize(("name", "lines", "patch_class", "patterns", "files"), [
    # Only source files count, deleted files and docs never; block and clock are not locks.
    ("low.diff", 0, "low", {}, {}),
    ("medium.diff", 4, "medium",
     {"retry": 1, "lock": 1, "time.": 1, "sleep": 1, "random": 1},
     {"src/pay/retry.py": 3, "tests/test_retry.py": 1}),
    ("high.diff", 6, "high",
     {"asyncio": 2, "thread": 2, "timeout": 2, "concurrent": 1, "async": 1, "await": 1,
      "datetime.now": 1, "lock": 1},
     {"service/worker.py": 5, "service/native/ring.c": 1}),
])
def test_a_fixed_diff_gives_fixed_counts_and_class(name, lines, patch_class, patterns,
                                                   files):
    risk = client.classify_diff((DIFFS / name).read_text())
    assert (risk.lines, risk.patch_class) == (lines, patch_class)
    assert dict(risk.patterns) == patterns
    assert dict(risk.files) == files


@pytest.mark.parametrize(("lines", "patch_class"), [
    (0, "low"), (1, "medium"), (client.MEDIUM_MAX_LINES, "medium"),
    (client.MEDIUM_MAX_LINES + 1, "high"),
])
def test_the_thresholds(lines, patch_class):
    added = "".join(f"+    time.sleep({i})\n" for i in range(lines))
    diff = f"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1,{lines} @@\n{added}"
    assert client.classify_diff(diff).patch_class == patch_class
    assert client.CLASS_RUNS_FACTOR == {"low": 1, "medium": 2, "high": 4}


def test_an_added_line_that_looks_like_a_header_still_counts():
    diff = ("diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1,2 @@\n"
            "+++lock_count\n+--timeout\n")
    assert client.classify_diff(diff).lines == 2


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=repo, check=True,
                   capture_output=True, env={"PATH": "/usr/bin:/bin", **GIT_ENV})


def git_project(root: Path, change: str) -> Path:
    """A project committed twice in a git repository: its base, then ``change`` added to
    test_io.py's test."""
    make_project(root, {"test_io.py": "def test_retry():\n    pass\n"})
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "base")
    with (root / "test_io.py").open("a") as handle:
        handle.write(change)
    git(root, "commit", "-q", "-am", "change")
    return root


@pytest.mark.slow
def test_a_real_repositorys_diff_through_git(tmp_path, monkeypatch):
    git_project(tmp_path, "\n\ndef test_wait():\n    time.sleep(0)\n    assert clock\n")
    monkeypatch.chdir(tmp_path)
    risk = client.classify_diff(client.git_diff("HEAD~1..HEAD"))
    assert (risk.lines, risk.patch_class, dict(risk.files)) == (1, "medium", {"test_io.py": 1})


@pytest.mark.slow
def test_the_class_is_stored_on_the_batch_and_shown(run, tmp_path, suite, client_for, lead):
    git_project(tmp_path, "\nimport time\n" + "".join(
        f"\n\ndef test_wait_{i}():\n    time.sleep(0)\n" for i in range(6)))
    done = run("gate", "--diff", "HEAD~1", "--upload", "-p", "no:cacheprovider",
               PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", **GIT_ENV)
    assert done.returncode == 0, done.stderr
    assert "PATCH CLASS high: 6 added source lines touching concurrency or time " \
           "(time. 6, sleep 6) in test_io.py" in done.stdout
    batch = VerdictBatch.objects.get()
    assert (batch.patch_class, batch.risky_lines) == ("high", 6)
    page = client_for(lead).get(f"/suites/acme/verdicts/{batch.pk}/").content.decode()
    assert "Patch class" in page
    assert "high: 6 added lines touching concurrency or time" in page


@pytest.mark.slow
def test_without_diff_no_class_is_sent(run, tmp_path):
    make_project(tmp_path, {"test_io.py": "def test_retry():\n    pass\n"})
    done = run("gate", "--upload", "-p", "no:cacheprovider", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    assert done.returncode == 0, done.stderr
    batch = VerdictBatch.objects.get()
    assert (batch.patch_class, batch.risky_lines) == ("", None)


@pytest.mark.slow
def test_a_range_git_cannot_diff_is_a_usage_error(run, tmp_path):
    git_project(tmp_path, "\n")
    done = run("gate", "--diff", "no-such-ref...HEAD", "--upload", **GIT_ENV)
    assert done.returncode == 64
    assert "flakeboard: git diff no-such-ref...HEAD failed (exit code 128): " in done.stderr
    assert not VerdictBatch.objects.exists()
