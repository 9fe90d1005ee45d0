"""How a run is split and run: which modules ``-m`` leaves out before they are imported
(tests/lanes.py: only those whose module-level marks alone deselect every test they hold),
which modules each xdist worker compiles first (tests/compile_share.py: every module of the
run once), and a worker's process ending at once (tests/worker_exit.py: nothing lost)."""

import os
import subprocess
import sys

import pytest
from django.conf import settings
from hypothesis import given
from hypothesis import strategies as st

from tests.compile_share import module_name, run_modules, worker_slice
from tests.lanes import left_out, marks_on_helpers, module_marks, pytest_ignore_collect
from tests.properties import PROPERTY

FAST = "not slow and not browser and not fuzz and not wide"


@pytest.mark.parametrize(
    ("markexpr", "marks", "expected"),
    [
        (FAST, {"slow"}, True),
        (FAST, {"browser", "skipif"}, True),
        (FAST, {"wide"}, True),
        (FAST, {"django_db"}, False),
        (FAST, set(), False),
        ("slow", {"slow"}, False),
        # A test of the module may add the mark the expression asks for.
        ("slow", set(), False),
        ("browser or fuzz", {"django_db"}, False),
        ("not slow or browser", {"slow"}, False),
        ("slow and not fuzz", {"fuzz"}, True),
    ],
)
def test_a_module_is_left_out_only_when_no_test_of_it_can_be_selected(markexpr, marks, expected):
    assert left_out(markexpr, marks) is expected


def test_the_module_marks_are_read_from_its_one_pytestmark():
    source = (
        '"""Doc."""\n\nimport pytest\n\npytestmark = [\n    pytest.mark.slow,\n'
        '    pytest.mark.skipif(True, reason="x"),\n]\n\nMARK = pytest.mark.browser\n'
    )
    assert module_marks(source) == {"slow", "skipif"}
    assert module_marks("import pytest\n\nMARK = pytest.mark.slow\n") is None
    assert module_marks("pytestmark = pytest.mark.fuzz\n") == {"fuzz"}


def test_a_mark_is_on_a_test_never_on_a_helper():
    """A mark on a helper marks no test: the test it was meant for (one that starts a real
    process, say) would run in the fast lane."""
    assert marks_on_helpers("import pytest\n\n@pytest.mark.slow\ndef _copy(path):\n"
                            "    return path\n\n@pytest.fixture\ndef made():\n    return 1\n"
                            "\n@pytest.mark.slow\ndef test_runs():\n    pass\n") == ["_copy"]
    tests = settings.BASE_DIR / "tests"
    misplaced = {path.name: names for path in sorted(tests.rglob("test_*.py"))
                 if (names := marks_on_helpers(path.read_text(encoding="utf-8")))}
    assert misplaced == {}


def test_the_fast_lane_of_the_makefile_is_the_expression_tested_here():
    from django.conf import settings

    makefile = (settings.BASE_DIR / "Makefile").read_text(encoding="utf-8")
    assert f'-m "{FAST}"' in makefile


class Config:
    def __init__(self, markexpr: str = "", args=()):
        self.markexpr = markexpr
        self.args = [str(arg) for arg in args]

    def getoption(self, name, default=None):
        return self.markexpr if name == "markexpr" else default


def test_a_folder_is_left_out_only_when_every_test_module_in_it_is(tmp_path):
    folder = tmp_path / "journeys"
    (folder / "deeper").mkdir(parents=True)
    (folder / "conftest.py").write_text("import pytest\n")
    (folder / "test_a.py").write_text("import pytest\n\npytestmark = pytest.mark.browser\n")
    (folder / "deeper" / "test_b.py").write_text("import pytest\n\npytestmark = pytest.mark.slow\n")
    assert pytest_ignore_collect(folder, Config(FAST)) is True
    assert pytest_ignore_collect(folder, Config("")) is None
    assert pytest_ignore_collect(folder, Config("browser")) is None
    (folder / "deeper" / "test_c.py").write_text("def test_c():\n    pass\n")
    assert pytest_ignore_collect(folder, Config(FAST)) is None
    (tmp_path / "empty").mkdir()
    assert pytest_ignore_collect(tmp_path / "empty", Config(FAST)) is None


@PROPERTY
@given(modules=st.integers(min_value=0, max_value=300), workers=st.integers(1, 16))
def test_the_workers_shares_hold_each_module_once_in_order_and_evenly(modules, workers):
    names = [f"test_{index}" for index in range(modules)]
    shares = [worker_slice(names, worker, workers) for worker in range(workers)]
    assert [name for share in shares for name in share] == names
    sizes = [len(share) for share in shares]
    assert max(sizes) - min(sizes) <= 1


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
    names = [path.name for path in run_modules(Config(args=[folder]))]
    assert names == ["test_a.py", "test_b.py", "test_slow.py"]
    assert [path.name for path in run_modules(Config(FAST, [folder]))] == ["test_a.py",
                                                                           "test_b.py"]
    # A run naming a file, or a test in it, has little to compile: nothing is shared.
    assert run_modules(Config(args=[folder, folder / "test_a.py"])) == []
    assert run_modules(Config(args=[f"{folder / 'test_a.py'}::test_a"])) == []


def test_a_module_is_named_from_the_outermost_folder_of_its_package(tmp_path):
    folder = _folder(tmp_path)
    assert module_name(folder / "test_a.py") == "tests.test_a"
    assert module_name(folder / "deeper" / "test_c.py") == "test_c"
    (folder / "deeper" / "__init__.py").write_text("")
    assert module_name(folder / "deeper" / "test_c.py") == "tests.deeper.test_c"


def two_workers(tmp_path, hook: str, modules: dict[str, str], *options: str):
    """A pytest run of two xdist workers over the package ``checks`` of ``modules`` (name:
    source), whose conftest.py's ``pytest_collection`` calls ``hook(session)``, a function
    of this project's tests package; the worker's environment is this test's, less Django."""
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "__init__.py").write_text("")
    module, function = hook.rsplit(".", 1)
    (checks / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(settings.BASE_DIR)!r})\n"
        f"from {module} import {function}\n\n\n"
        f"def pytest_collection(session):\n    {function}(session)\n")
    for name, source in modules.items():
        (checks / f"test_{name}.py").write_text(source)
    environment = {name: value for name, value in os.environ.items()
                   if name != "DJANGO_SETTINGS_MODULE"}
    environment["PYTHONDONTWRITEBYTECODE"] = ""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-p", "no:randomly", "-p", "no:django",
         "-p", "no:cacheprovider", "-q", *options, "checks"],
        cwd=tmp_path, env=environment, capture_output=True, text=True, check=False)


@pytest.mark.slow
def test_in_a_run_of_two_workers_the_second_imports_the_second_half_first(tmp_path):
    """Each module notes which worker imported it: the first worker in the order pytest
    collects, the second from the half that is its share, then the first half."""
    noted = str(tmp_path / "imports")
    done = two_workers(tmp_path, "tests.compile_share.compile_first", {
        name: (f"import os\n\nWORKER = os.environ['PYTEST_XDIST_WORKER']\n"
               f"with open({noted!r} + WORKER, 'a') as f:\n"
               f"    f.write('{name}')\n\n\ndef test_{name}():\n    assert True\n")
        for name in "abcd"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout
    assert (tmp_path / "importsgw0").read_text() == "abcd"
    assert (tmp_path / "importsgw1").read_text() == "cdab"


@pytest.mark.slow
def test_a_run_of_two_workers_keeps_its_outcomes_and_its_exit_handlers(tmp_path):
    """A worker's process ends at once (tests/worker_exit.py), and nothing of the run is
    lost: its tests' outcomes reach the run, and the exit handlers registered after it run."""
    handled = str(tmp_path / "handled")
    done = two_workers(tmp_path, "tests.worker_exit.end_at_once", {
        name: ("import atexit\nimport os\n\n\n"
               f"def _note():\n    with open({handled!r} + os.environ['PYTEST_XDIST_WORKER'],"
               " 'w') as f:\n        f.write('ran')\n\n\n"
               f"def test_{name}_passes():\n    atexit.register(_note)\n\n\n"
               f"def test_{name}_fails():\n    assert '{name}' == 'c'\n")
        for name in "ab"}, "--dist", "loadfile")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 failed, 2 passed" in done.stdout
    assert "assert 'a' == 'c'" in done.stdout and "assert 'b' == 'c'" in done.stdout
    assert "crashed" not in done.stdout + done.stderr
    assert sorted(path.name for path in tmp_path.glob("handled*")) == ["handledgw0", "handledgw1"]
