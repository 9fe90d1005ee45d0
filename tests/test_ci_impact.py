"""Test impact analysis (SPEC 2.4c): gate --record-impact records which source files each
test executes (sys.monitoring on 3.12+, sys.settrace before or when another tool holds
the monitoring ids) and sends the map to the board; a pull request's gate --measure then
measures the tests that execute a file it changed, with the patch class's runs, each line
saying which file."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ledger.models import Suite
from runs.ingest import signals_ingest
from runs.models import ImpactMap, Report
from tests.helpers import body, record
from tests.measure_projects import CLIENT, clean_env, make_project
from tests.test_ci_gate_diff import GIT_ENV, git
from tests.test_ci_gate_measure import gate  # noqa: F401 - a fixture

pytestmark = pytest.mark.slow  # each test starts a real process

SOURCES = {
    "src/mod_a.py": "def a():\n    return 1\n",
    "src/mod_b.py": "def b():\n    return 2\n",
    "tests/test_a.py": "import mod_a\n\n\ndef test_a():\n    assert mod_a.a() == 1\n\n\n"
                       "def test_plain():\n    assert 2 + 2 == 4\n\n\n"
                       "def test_a_again():\n    assert mod_a.a() == 1\n",
    "tests/test_b.py": "import mod_b\n\n\ndef test_b():\n    assert mod_b.b() == 2\n",
}
# Another tool holds every monitoring id the recorder asks for: it falls back to settrace.
HOLDS_THE_IDS = ("import sys\n\nfor tool in (3, 4, 5):\n"
                 "    sys.monitoring.use_tool_id(tool, 'another tool')\n")


def recorded(project, *options, key="impact"):
    """Run pytest in ``project`` with the client as its plugin, recording impact under the
    project; what the gate's recorder wrote under ``key``."""
    out = project / "outcomes.json"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "flakeboard_ci", "-p", "no:cacheprovider",
         f"--flakeboard-record={out}", f"--flakeboard-impact={project}", *options],
        cwd=project, env=clean_env(PYTHONPATH=str(CLIENT.parent)), capture_output=True,
        text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(out.read_text())[key]


@pytest.mark.parametrize("conftest", ["", HOLDS_THE_IDS], ids=["monitoring", "settrace"])
def test_the_map_names_the_source_files_each_test_executes(tmp_path, conftest):
    make_project(tmp_path, {**SOURCES, "tests/conftest.py": conftest})
    (tmp_path / "pytest.ini").write_text("[pytest]\npythonpath = src\n")
    assert recorded(tmp_path) == {
        "tests/test_a.py::test_a": ["src/mod_a.py"],
        # Its file imports mod_a, but it runs none of its code.
        "tests/test_a.py::test_plain": [],
        # Each test records anew what the tests before it ran.
        "tests/test_a.py::test_a_again": ["src/mod_a.py"],
        "tests/test_b.py::test_b": ["src/mod_b.py"],
    }


def test_a_tracer_already_set_is_left_alone_and_no_map_is_recorded(tmp_path):
    make_project(tmp_path, {**SOURCES, "tests/conftest.py": HOLDS_THE_IDS
                            + "sys.settrace(lambda frame, event, arg: None)\n"})
    (tmp_path / "pytest.ini").write_text("[pytest]\npythonpath = src\n")
    assert recorded(tmp_path) == {}
    assert "holds sys.settrace" in recorded(tmp_path, key="impact_blocked")


@pytest.mark.slow
def test_under_xdist_each_worker_records_its_own_tests(tmp_path):
    pytest.importorskip("xdist")
    make_project(tmp_path, SOURCES)
    (tmp_path / "pytest.ini").write_text("[pytest]\npythonpath = src\n")
    assert recorded(tmp_path, "-p", "xdist", "-n", "2") == {
        "tests/test_a.py::test_a": ["src/mod_a.py"], "tests/test_a.py::test_plain": [],
        "tests/test_a.py::test_a_again": ["src/mod_a.py"],
        "tests/test_b.py::test_b": ["src/mod_b.py"]}


MIN_RUNS = 5
CALLS_A = [f"tests/test_a.py::test_{i}" for i in range(3)]
PLAIN = ["tests/test_a.py::test_plain", "tests/test_b.py::test_0", "tests/test_b.py::test_1"]


@pytest.fixture
def project(tmp_path, suite, run):
    """Three tests that call mod_a, three that do not; the base commit's gate records the
    map; then a pull request adds a risky line to mod_a (a medium patch)."""
    calls_a = "".join(f"def test_{i}():\n    assert mod_a.a() == 1\n\n\n" for i in range(3))
    make_project(tmp_path, {
        "mod_a.py": "def a():\n    return 1\n", "mod_b.py": "def b():\n    return 2\n",
        "tests/test_a.py": f"import mod_a\n\n\n{calls_a}def test_plain():\n    pass\n",
        "tests/test_b.py": "import mod_b\n\n\n" + "".join(
            f"def test_{i}():\n    assert mod_b.b() == 2\n\n\n" for i in range(2)),
    })
    (tmp_path / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    Suite.objects.filter(pk=suite.pk).update(min_runs=MIN_RUNS, max_upper_rate=0.5)
    signals_ingest(suite=suite, body=body([record(node) for node in CALLS_A + PLAIN]),
                   actor="ci", query={"commit": "base", "patch": "main"})
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    done = run("gate", "--record-impact", "--commit", "base", "-p", "no:cacheprovider",
               PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PATCH_SEED="9137", **GIT_ENV)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "IMPACT: the map of 6 tests and 2 source files at base replaced the suite's." \
        in done.stdout
    with (tmp_path / "mod_a.py").open("a") as handle:
        handle.write("RETRIES = 2  # retry once more\n")
    git(tmp_path, "commit", "-q", "-am", "pull request")
    return tmp_path


@pytest.mark.slow
def test_a_pull_request_measures_the_tests_that_execute_the_file_it_changed(
        gate, project, suite):  # noqa: F811
    stored = ImpactMap.objects.get(suite=suite)
    assert (stored.commit, stored.nodes, stored.paths) == ("base", 6, 2)
    done = gate("--diff", "HEAD~1", "--commit", "pr-1", "--upload", "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    notes = done.stderr  # with --format json the plan's lines go to stderr
    assert "MEASURE 3 tier-2 nodes, 10 runs each (medium patch: 2 x min_runs 5" in notes
    assert "3 runs a changed file" in notes
    for node in CALLS_A:
        assert f"  {node}: 10 runs, runs the changed mod_a.py" in notes
    assert "NIGHTLY: 3 tier-2 nodes ran once here" in notes
    answer = json.loads(done.stdout.splitlines()[-1])
    assert {m["nodeid"]: m["measured_because"] for m in answer["measurements"]} == \
        dict.fromkeys(CALLS_A, "runs the changed mod_a.py")
    judged = {m.node.nodeid: m.n for m in
              Report.objects.get().measurements.select_related("node")}
    assert judged == dict.fromkeys(CALLS_A, 2 * MIN_RUNS)
