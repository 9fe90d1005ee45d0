"""Which test modules each worker of a run compiles first (tests/compile_share.py): the
workers' shares hold every module of the run once, and only modules the run collects."""

import os
import subprocess
import sys

import pytest
from django.conf import settings
from hypothesis import given
from hypothesis import strategies as st

from tests.compile_share import module_name, run_modules, worker_slice
from tests.properties import PROPERTY

FAST = "not slow and not browser and not fuzz and not wide"


@PROPERTY
@given(modules=st.integers(min_value=0, max_value=300), workers=st.integers(1, 16))
def test_the_workers_shares_hold_each_module_once_in_order_and_evenly(modules, workers):
    names = [f"test_{index}" for index in range(modules)]
    shares = [worker_slice(names, worker, workers) for worker in range(workers)]
    assert [name for share in shares for name in share] == names
    sizes = [len(share) for share in shares]
    assert max(sizes) - min(sizes) <= 1


class Config:
    def __init__(self, args, markexpr=""):
        self.args = [str(arg) for arg in args]
        self.markexpr = markexpr

    def getoption(self, name, default=None):
        return self.markexpr if name == "markexpr" else default


def _folder(tmp_path):
    folder = tmp_path / "tests"
    (folder / "deeper").mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "test_b.py").write_text("def test_b():\n    pass\n")
    (folder / "test_a.py").write_text("def test_a():\n    pass\n")
    (folder / "test_slow.py").write_text("import pytest\n\npytestmark = pytest.mark.slow\n")
    (folder / "helpers.py").write_text("")
    (folder / "deeper" / "test_c.py").write_text("def test_c():\n    pass\n")
    return folder


def test_the_run_s_modules_are_those_it_collects_of_the_folders_it_names(tmp_path):
    folder = _folder(tmp_path)
    names = [path.name for path in run_modules(Config([folder]))]
    assert names == ["test_a.py", "test_b.py", "test_slow.py"]
    assert [path.name for path in run_modules(Config([folder], FAST))] == ["test_a.py",
                                                                           "test_b.py"]
    # A run naming a file, or a test in it, has little to compile: nothing is shared.
    assert run_modules(Config([folder, folder / "test_a.py"])) == []
    assert run_modules(Config([f"{folder / 'test_a.py'}::test_a"])) == []


def test_a_module_is_named_from_the_outermost_folder_of_its_package(tmp_path):
    folder = _folder(tmp_path)
    assert module_name(folder / "test_a.py") == "tests.test_a"
    assert module_name(folder / "deeper" / "test_c.py") == "test_c"
    (folder / "deeper" / "__init__.py").write_text("")
    assert module_name(folder / "deeper" / "test_c.py") == "tests.deeper.test_c"


@pytest.mark.slow
def test_in_a_run_of_two_workers_the_second_imports_the_second_half_first(tmp_path):
    """Each module notes which worker imported it: the first worker in the order pytest
    collects, the second from the half that is its share, then the first half."""
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "__init__.py").write_text("")
    (checks / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(settings.BASE_DIR)!r})\n"
        "from tests.compile_share import compile_first\n\n\n"
        "def pytest_collection(session):\n    compile_first(session)\n")
    for name in "abcd":
        (checks / f"test_{name}.py").write_text(
            f"import os\n\nWORKER = os.environ['PYTEST_XDIST_WORKER']\n"
            f"with open({str(tmp_path / 'imports')!r} + WORKER, 'a') as f:\n"
            f"    f.write('{name}')\n\n\ndef test_{name}():\n    assert True\n")
    environment = {name: value for name, value in os.environ.items()
                   if name != "DJANGO_SETTINGS_MODULE"}
    environment["PYTHONDONTWRITEBYTECODE"] = ""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-p", "no:randomly", "-p", "no:django",
         "-p", "no:cacheprovider",
         "-q", "checks"],
        cwd=tmp_path, env=environment, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout
    assert (tmp_path / "importsgw0").read_text() == "abcd"
    assert (tmp_path / "importsgw1").read_text() == "cdab"
