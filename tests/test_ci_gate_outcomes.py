"""`flakeboard_ci.py gate` with no board (--ledger FILE): each selected node's pytest outcome
becomes its property_check as pytest counts it, the session's early stops leave the rest not
run, and the records are judged here with the board's precedence table."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.measure_projects import CLIENT, gate, make_project

pytestmark = pytest.mark.slow  # each test starts a real process

PY38 = Path.home() / ".pyenv" / "versions" / "3.8.18" / "bin" / "python3"
FAR = "2099-01-01"
OUTCOMES = """
import pytest


@pytest.fixture
def broken():
    raise RuntimeError("no database")


@pytest.fixture
def leaky():
    yield
    raise RuntimeError("left a file behind")


@pytest.fixture
def skipping():
    pytest.skip("no GPU here")


def test_pass():
    pass


def test_fail():
    assert 1 + 1 == 3


def test_setup_error(broken):
    pass


def test_teardown_error(leaky):
    pass


@pytest.mark.skip(reason="later")
def test_skip():
    pass


def test_skip_in_fixture(skipping):
    pass


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False


@pytest.mark.xfail(reason="known", strict=True)
def test_strict_xpass():
    pass


@pytest.mark.xfail(reason="known", strict=False)
def test_xpass():
    pass
"""
EXPECTED = {"test_pass": "pass", "test_fail": "fail", "test_setup_error": "fail",
            "test_teardown_error": "fail", "test_skip": "not_run",
            "test_skip_in_fixture": "not_run", "test_xfail": "pass",
            "test_strict_xpass": "fail", "test_xpass": "pass"}
STOPS = """
def test_one():
    pass


def test_two():
    assert False


def test_three():
    pass


def test_four():
    pass
"""


def full_ledger(project, entries=(), pin=None, name="ledger.json"):
    """A full ledger file as `ledger --full` writes it, with these (node, expires) entries."""
    ledger = {"entries": [{"node": node, "expires": expires, "owner": "@finley",
                           "state": "active"} for node, expires in entries],
              "fixture_pin": pin, "policy": {}}
    (project / name).write_text(json.dumps(ledger))
    return name


def checks(project):
    records = json.loads((project / "signals.json").read_text())["records"]
    return {r["node"].split("::")[-1]: r["property_check"] for r in records}


@pytest.fixture
def outcomes(tmp_path):
    return make_project(tmp_path, {"test_outcomes.py": OUTCOMES})


def test_each_outcome_is_mapped_as_pytest_counts_it(outcomes):
    done = gate(outcomes, "--ledger", full_ledger(outcomes), "--all")
    assert done.returncode == 1, done.stderr
    assert checks(outcomes) == EXPECTED
    lines = done.stdout.splitlines()
    rejects = [line for line in lines if line.startswith("REJECT")]
    assert [line.split("::")[1] for line in rejects] == [
        "test_fail: property_fail", "test_setup_error: property_fail",
        "test_teardown_error: property_fail", "test_strict_xpass: property_fail"]
    assert lines.index(rejects[-1]) < lines.index(
        "HOLD   test_outcomes.py::test_skip: property_not_run")
    assert "ACCEPT test_outcomes.py::test_xfail: clean" in lines
    assert "batch REJECT (property_fail): 9 records" in done.stdout
    assert done.stdout.rstrip().endswith("exit code 1")
    assert "test_fail" in done.stderr  # pytest's own output, kept off stdout


def test_the_records_carry_the_manifest_and_the_patch_seed(outcomes):
    (outcomes / "fixtures").mkdir()
    (outcomes / "fixtures" / "rates.json").write_text("[]\n")
    done = gate(outcomes, "--ledger", full_ledger(outcomes), "--fixtures", "fixtures",
                "--patch", "p-7", "--commit", "abc", "-k", "test_pass", PATCH_SEED="9137",
                GITLAB_CI="true", CI_JOB_URL="https://gitlab.example.com/a/b/-/jobs/42")
    assert done.returncode == 0, done.stderr
    sent = json.loads((outcomes / "signals.json").read_text())
    assert {key: sent[key] for key in ("patch", "commit", "evidence")} == {
        "patch": "p-7", "commit": "abc", "evidence": "https://gitlab.example.com/a/b/-/jobs/42"}
    (record,) = sent["records"]
    assert record["seed"] == 9137 and record["fixture_manifest"].startswith("sha256:")
    assert (record["fixture_lock"], record["flake_status"]) == ("match", "stable")
    assert "section_start:" in done.stdout  # GitLab's output, chosen by GITLAB_CI


@pytest.mark.parametrize(("option", "checked"), [
    ("-x", {"test_one": "pass", "test_two": "fail", "test_three": "not_run",
            "test_four": "not_run"}),
    ("--maxfail=1", {"test_one": "pass", "test_two": "fail", "test_three": "not_run",
                     "test_four": "not_run"}),
])
def test_nodes_the_session_never_reached_are_not_run(tmp_path, option, checked):
    project = make_project(tmp_path, {"test_stops.py": STOPS})
    done = gate(project, "--ledger", full_ledger(project), option)
    assert done.returncode == 1, done.stderr
    assert checks(project) == checked


def test_an_interrupt_leaves_the_rest_not_run(tmp_path):
    source = STOPS.replace("assert False", "raise KeyboardInterrupt")
    project = make_project(tmp_path, {"test_stops.py": source})
    done = gate(project, "--ledger", full_ledger(project))
    assert done.returncode == 2, done.stderr
    assert checks(project) == {"test_one": "pass", "test_two": "not_run",
                               "test_three": "not_run", "test_four": "not_run"}
    assert "batch HOLD (property_not_run)" in done.stdout


def test_deselect_frozen_leaves_them_out_of_the_run_and_says_which(tmp_path):
    project = make_project(tmp_path, {"test_stops.py": STOPS})
    ledger = full_ledger(project, [("test_stops.py::test_two", FAR),
                                   ("test_stops.py::test_gone", FAR)])
    held = gate(project, "--ledger", ledger)
    assert held.returncode == 2, held.stderr
    assert "HOLD   test_stops.py::test_two: frozen_node; quarantined until 2099-01-01 by " \
        "@finley" in held.stdout
    done = gate(project, "--ledger", ledger, "--deselect-frozen")
    assert done.returncode == 0, done.stderr
    assert checks(project) == {"test_one": "pass", "test_three": "pass", "test_four": "pass"}
    sent = json.loads((project / "signals.json").read_text())
    assert sent["deselected_frozen"] == ["test_stops.py::test_two"]
    assert "LEFT OUT test_stops.py::test_two: frozen until 2099-01-01" in done.stdout


def test_json_output_is_the_answer_alone(tmp_path):
    project = make_project(tmp_path, {"test_stops.py": STOPS})
    done = gate(project, "--ledger", full_ledger(project), "--format", "json", "-k", "one")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert (answer["verdict"], answer["exit_code"], answer["url"]) == ("accept", 0, None)


@pytest.mark.parametrize(("args", "env", "message"), [
    (("--bogus-pytest-option",), {}, "pytest could not run the selection (exit code 4)"),
    (("no_such_dir",), {}, "pytest could not run the selection (exit code 4)"),
    ((), {"PATCH_SEED": "abc"}, "PATCH_SEED must be a whole number"),
    (("--ledger", "compact.json"), {}, "not the full view of a ledger"),
    (("--ledger", "absent.json"), {}, "cannot read the ledger absent.json"),
])
def test_wrong_usage_exits_64(tmp_path, args, env, message):
    project = make_project(tmp_path, {"test_stops.py": STOPS})
    (project / "compact.json").write_text("{}")
    if "--ledger" not in args:
        args = ("--ledger", full_ledger(project), *args)
    done = gate(project, *args, **env)
    assert done.returncode == 64, done.stdout
    assert message in done.stderr


def test_without_a_board_or_a_ledger_file_gate_says_what_it_needs(tmp_path):
    project = make_project(tmp_path, {"test_stops.py": STOPS})
    done = gate(project)
    assert done.returncode == 64
    assert "set FLAKEBOARD_URL" in done.stderr


@pytest.mark.skipif(not os.access(PY38, os.X_OK), reason="no Python 3.8 at ~/.pyenv")
def test_pin_and_gate_start_on_python_3_8(tmp_path):
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "a.txt").write_text("a\n")
    done = gate(tmp_path, "--help", python=str(PY38))
    assert done.returncode == 0 and "--deselect-frozen" in done.stdout, done.stderr
    pinned = subprocess.run([str(PY38), "-I", "-S", str(CLIENT), "pin", "--fixtures",
                             "fixtures", "--seed", "3"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=60)
    assert pinned.returncode == 0, pinned.stderr
    assert pinned.stdout.startswith("fixture_manifest: sha256:")
