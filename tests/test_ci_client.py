"""The single-file CI client, downloaded from the board and run as CI runs it."""

import ast
import json
import sys
from datetime import timedelta

import pytest
from django.conf import settings

from ledger.quarantine import quarantine_create
from runs.models import Report, VerdictBatch
from tests.api_http import new_token
from tests.helpers import measurement, record
from tests.helpers import write_upload as write

CLIENT = settings.BASE_DIR / "client" / "flakeboard_ci.py"
FLAKY = "tests/test_ingest.py::test_stream_backpressure"


def test_the_board_serves_the_client_file(client_script):
    assert client_script.read_bytes() == CLIENT.read_bytes()


def test_the_client_uses_only_the_standard_library():
    tree = ast.parse(CLIENT.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert imported and imported <= set(sys.stdlib_module_names) | {"__future__"}


@pytest.mark.slow
def test_ledger_writes_flake_ledger_json(run, suite, today, tmp_path, board):
    suite.max_quarantined_share = 1.0
    suite.save()
    for nodeid, days in ((FLAKY, 10), ("tests/a.py::test_old", -2)):
        quarantine_create(suite=suite, nodeid=nodeid, owner="@finley", evidence="ci/run-1",
                          expires=today + timedelta(days=days), actor="@finley", today=today,
                          imported=days < 0)
    done = run("ledger", token=new_token(suite, "read"))
    assert done.returncode == 0, done.stderr
    served = board.ledger(suite.slug, new_token(suite, "read")).json
    assert json.loads((tmp_path / "flake_ledger.json").read_text()) == served
    assert "EXPIRED tests/a.py::test_old" in done.stdout
    assert "2 quarantine entries of suite acme, 1 expired" in done.stdout


@pytest.mark.slow
def test_ledger_full_view_goes_to_its_own_file(run, suite, tmp_path):
    done = run("ledger", "--full", token=new_token(suite, "read"))
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "flake_ledger_full.json").read_text())["suite"]["slug"] == \
        "acme"
    assert not (tmp_path / "flake_ledger.json").exists()


@pytest.mark.slow
def test_a_failing_report_exits_1_with_a_line_per_node(run, suite, tmp_path):
    name = write(tmp_path, "flake-report.json",
                 [measurement("tests/a.py::test_ok"), measurement(FLAKY, fails=5)])
    done = run("report", name, "--commit", "abc123", "--branch", "main", "--all")
    assert done.returncode == 1, done.stderr
    assert done.stdout.index(f"FAIL {FLAKY}: over_budget (upper95=0.0572, 5/200 failed)") < \
        done.stdout.index("OK   tests/a.py::test_ok: within_budget")
    report = Report.objects.get()
    assert f"/suites/acme/reports/{report.pk}/" in done.stdout
    assert (report.commit, report.branch) == ("abc123", "main")


@pytest.mark.slow
def test_a_passing_report_exits_0_and_the_file_name_defaults(run, tmp_path):
    write(tmp_path, "flake-report.json", [measurement("tests/a.py::test_ok")])
    done = run("report")
    assert done.returncode == 0, done.stderr
    assert "report OK (within_budget)" in done.stdout


@pytest.mark.slow
def test_an_empty_report_exits_1(run, tmp_path):
    done = run("report", write(tmp_path, "flake-report.json", []))
    assert done.returncode == 1
    assert "report FAIL (no_evidence)" in done.stdout


@pytest.mark.slow
def test_a_dry_run_stores_nothing(run, tmp_path):
    done = run("report", write(tmp_path, "r.json", [measurement(FLAKY, fails=5)]), "--dry-run")
    assert done.returncode == 1 and "Dry run: nothing was stored." in done.stdout
    assert not Report.objects.exists()


@pytest.mark.slow
def test_a_second_upload_says_it_was_a_duplicate(run, tmp_path):
    name = write(tmp_path, "r.json", [measurement("tests/a.py::test_ok")])
    assert run("report", name).returncode == 0
    again = run("report", name)
    assert again.returncode == 0 and "uploaded before" in again.stdout
    assert Report.objects.count() == 1


@pytest.mark.slow
@pytest.mark.parametrize(("records", "code", "line"), [
    ([record("a::x")], 0, "ACCEPT a::x: clean"),
    ([record("a::x"), record("a::y", prop="fail")], 1, "REJECT a::y: property_fail"),
    ([record("a::x", lock="drifted")], 2, "HOLD   a::x: fixture_drifted"),
    ([], 2, "batch HOLD (no_evidence)"),
])
def test_signals_exit_with_the_verdict(run, tmp_path, records, code, line):
    done = run("signals", write(tmp_path, "signals.json", records), "--patch", "p-1", "--all")
    assert done.returncode == code, done.stderr
    assert line in done.stdout
    assert VerdictBatch.objects.get().patch == "p-1"


@pytest.mark.slow
def test_an_explicit_suite_is_used(run, suite, other_suite, tmp_path):
    name = write(tmp_path, "r.json", [measurement("a::x")])
    done = run("report", name, FLAKEBOARD_SUITE=other_suite.slug)
    assert done.returncode == 4
    assert "wrong_suite" in done.stderr
    assert run("report", name, FLAKEBOARD_SUITE=suite.slug).returncode == 0


@pytest.mark.slow
def test_an_unreachable_board_has_its_own_exit_code(run, tmp_path, dead_url):
    name = write(tmp_path, "r.json", [measurement("a::x")])
    done = run("--retries", "0", "report", name, FLAKEBOARD_URL=dead_url)
    assert done.returncode == 3
    assert f"cannot reach the board at {dead_url}" in done.stderr


@pytest.mark.slow
def test_a_refusal_names_the_problem(run, suite, tmp_path):
    bad = write(tmp_path, "r.json", [measurement("a::x"), measurement("a::y", n=5, fails=6)])
    done = run("report", bad)
    assert done.returncode == 4
    assert "422 validation_failed" in done.stderr and "row 1, field fails" in done.stderr
    read_only = run("report", write(tmp_path, "ok.json", [measurement("a::x")]),
                    token=new_token(suite, "read"))
    assert read_only.returncode == 4 and "wrong_scope" in read_only.stderr
    assert run("ledger", token="fbr_not-a-real-token").returncode == 4


@pytest.mark.slow
@pytest.mark.parametrize(("args", "env", "message"), [
    (("report", "missing.json"), {}, "cannot read missing.json"),
    (("ledger",), {"FLAKEBOARD_TOKEN": ""}, "set FLAKEBOARD_TOKEN"),
    (("ledger",), {"FLAKEBOARD_URL": ""}, "set FLAKEBOARD_URL"),
    (("ledger",), {"FLAKEBOARD_URL": "file:///etc"}, "must start with https://"),
    (("publish",), {}, "invalid choice"),
    (("ledger", "--cache", "c", "--offline-max-age", "6 hours"), {}, "not a duration"),
    (("ledger", "--offline-max-age", "6h"), {}, "needs --cache DIR"),
])
def test_wrong_usage_exits_64(run, args, env, message):
    done = run(*args, **env)
    assert done.returncode == 64
    assert message in done.stderr

