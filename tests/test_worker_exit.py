"""A worker's process ends at once (tests/worker_exit.py), and nothing of the run is lost:
its tests' outcomes reach the run, and the exit handlers registered after it still run."""

import os
import subprocess
import sys

import pytest
from django.conf import settings

pytestmark = pytest.mark.slow


def test_a_run_of_two_workers_keeps_its_outcomes_and_its_exit_handlers(tmp_path):
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "__init__.py").write_text("")
    (checks / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(settings.BASE_DIR)!r})\n"
        "from tests.worker_exit import end_at_once_when_done\n\n\n"
        "def pytest_collection(session):\n    end_at_once_when_done(session.config)\n")
    handled = tmp_path / "handled"
    for name in "ab":
        (checks / f"test_{name}.py").write_text(
            "import atexit\nimport os\n\n\n"
            f"def _note():\n    with open({str(handled)!r} + os.environ['PYTEST_XDIST_WORKER'],"
            " 'w') as f:\n        f.write('ran')\n\n\n"
            f"def test_{name}_passes():\n    atexit.register(_note)\n\n\n"
            f"def test_{name}_fails():\n    assert '{name}' == 'c'\n")
    environment = {name: value for name, value in os.environ.items()
                   if name != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-p", "no:django", "-p", "no:cacheprovider",
         "-p", "no:randomly", "--dist", "loadfile", "-q", "checks"],
        cwd=tmp_path, env=environment, capture_output=True, text=True, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 failed, 2 passed" in done.stdout
    assert "assert 'a' == 'c'" in done.stdout and "assert 'b' == 'c'" in done.stdout
    assert "crashed" not in done.stdout + done.stderr
    assert sorted(path.name for path in tmp_path.glob("handled*")) == ["handledgw0", "handledgw1"]
