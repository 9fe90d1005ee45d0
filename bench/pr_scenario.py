"""The pull request of gate --measure at real size: a generated project of 500 tier-2 tests
in 20 files, run under pytest-xdist (``-n 2``), one of them broken (it fails every run); a
pull request adds two tests (one failing a quarter of its seeds) and edits one test file.
gate --measure measures the failed test, the two new ones and the edited file's tests, and
leaves the others to the nightly measure. B6d times it; tests/test_ci_gate_scenario.py
checks what it measures and says. Django-free: it writes files and runs git only."""

from __future__ import annotations

import subprocess
import typing
from pathlib import Path

FILES, PER_FILE = 20, 25
BROKEN_FILE, EDITED_FILE = 7, 3
SEED = "int(os.environ.get('PATCH_SEED', '0'))"
# A quarter of the seeds fail; PATCH_SEED 9137, gate's own run's, passes.
NEW_FLAKY = "seed % 4 == 0"
GIT_ENV = {"GIT_AUTHOR_NAME": "ci", "GIT_AUTHOR_EMAIL": "ci@example.com",
           "GIT_COMMITTER_NAME": "ci", "GIT_COMMITTER_EMAIL": "ci@example.com",
           "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}


# Each call phase as pytest times it, where CALL_LOG_ENV names a file (B6d's limit).
CALL_LOG_ENV = "PR_SCENARIO_CALL_LOG"
CONFTEST = f'''import os


def pytest_runtest_logreport(report):
    log = os.environ.get("{CALL_LOG_ENV}")
    if log and report.when == "call":
        with open(log, "a") as out:
            out.write(f"{{report.nodeid}}\\t{{report.duration}}\\n")
'''


class Scenario(typing.NamedTuple):
    """The project's folder and its nodes: those the board knows from the base commit,
    the broken one, the two the pull request adds (the flaky one second) and the edited
    file's."""

    root: Path
    known: list[str]
    broken: str
    new: list[str]
    edited: list[str]


def case_source(name: str, fails_when: str = "False") -> str:
    return f"def {name}():\n    seed = {SEED}\n    assert not ({fails_when}), seed\n\n\n"


def file_path(index: int) -> str:
    return f"tests/test_area_{index:02d}.py"


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=root, check=True,
                   capture_output=True, env={"PATH": "/usr/bin:/bin", **GIT_ENV})


def make_scenario(root: Path, files: int = FILES, per_file: int = PER_FILE,
                  addopts: str = "-p xdist -n 2") -> Scenario:
    """The project in ``root`` (``files`` test files of ``per_file`` tests, at least 8),
    committed twice (the base, then the pull request): gate --diff HEAD~1 sees the pull
    request."""
    (root / "tests").mkdir(parents=True)
    (root / "pytest.ini").write_text(f"[pytest]\naddopts = {addopts}\n")
    (root / "conftest.py").write_text(CONFTEST)
    known = []
    for index in range(files):
        names = [f"test_case_{index:02d}_{i:02d}" for i in range(per_file)]
        if index == BROKEN_FILE:
            names[-1] = "test_broken"
        source = "".join(case_source(name, "True" if name == "test_broken" else "False")
                         for name in names)
        (root / file_path(index)).write_text("import os\n\n\n" + source)
        known += [f"{file_path(index)}::{name}" for name in names]
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "base")
    (root / "tests" / "test_pull_request.py").write_text(
        "import os\n\n\n" + case_source("test_added")
        + case_source("test_added_flaky", NEW_FLAKY))
    with (root / file_path(EDITED_FILE)).open("a") as handle:
        handle.write("# an edit\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "pull request")
    edited = [node for node in known if node.startswith(file_path(EDITED_FILE) + "::")]
    return Scenario(root, known, f"{file_path(BROKEN_FILE)}::test_broken",
                    ["tests/test_pull_request.py::test_added",
                     "tests/test_pull_request.py::test_added_flaky"], edited)
