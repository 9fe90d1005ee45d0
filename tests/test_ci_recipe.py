"""The README's curl recipe, run with sh against the live board as a CI job runs it."""

import json
import re
import shutil
import subprocess

import pytest
from django.conf import settings

from runs.models import Report, VerdictBatch
from tests.api_http import new_token
from tests.helpers import measurement, record
from tests.helpers import write_upload as write

FLAKY = "tests/test_ingest.py::test_stream_backpressure"


def curl_version() -> tuple[int, int]:
    """curl's version, (0, 0) when it is missing."""
    if not shutil.which("curl"):
        return 0, 0
    out = subprocess.run(["curl", "--version"], capture_output=True, text=True).stdout
    match = re.match(r"curl (\d+)\.(\d+)", out)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


# --url-query is curl 7.87's, -w '%header{}' 7.84's.
pytestmark = pytest.mark.skipif(curl_version() < (7, 87), reason="needs curl 7.87 or newer")


def readme_recipe() -> str:
    text = (settings.BASE_DIR / "README.md").read_text()
    block = text.split("<!-- ci-recipe:start -->")[1].split("<!-- ci-recipe:end -->")[0]
    return block.strip().removeprefix("```sh").removesuffix("```")


@pytest.fixture
def recipe(live_server, suite, tmp_path):
    """recipe(report, signals, **env) runs the README's recipe with sh in tmp_path, with the
    two upload files and a CI job's environment."""

    def run_recipe(report, signals, **env):
        write(tmp_path, "flake-report.json", report)
        write(tmp_path, "signals.json", signals)
        environment = {"PATH": "/usr/bin:/bin", "FLAKEBOARD_URL": live_server.url,
                       "FLAKEBOARD_SUITE": suite.slug,
                       "FLAKEBOARD_TOKEN": new_token(suite, "write"),
                       "COMMIT": "abc123", "BRANCH": "main", **env}
        return subprocess.run(["sh", "-c", readme_recipe()], cwd=tmp_path, env=environment,
                              capture_output=True, text=True, timeout=60)

    return run_recipe


@pytest.mark.parametrize(("report", "signals", "code"), [
    ([measurement("tests/a.py::test_ok")], [record("a::x")], 0),
    ([measurement(FLAKY, fails=5)], [record("a::x")], 1),
    ([measurement("tests/a.py::test_ok")], [record("a::x", lock="missing")], 2),
])
def test_the_recipe_exits_with_the_gate(recipe, tmp_path, report, signals, code):
    done = recipe(report, signals)
    assert done.returncode == code, done.stderr
    assert json.loads((tmp_path / "flake_ledger.json").read_text()) == {}
    answers = done.stdout.splitlines()  # one answer a line, not glued together
    assert [json.loads(line)["exit_code"] for line in answers] == \
        [Report.objects.get().exit_code, VerdictBatch.objects.get().exit_code]
    assert json.loads(answers[0])["id"] == Report.objects.get().pk
    assert Report.objects.get().commit == "abc123"
    assert VerdictBatch.objects.get().commit == "abc123"


def test_a_refused_upload_exits_4(recipe):
    done = recipe([measurement("a::x", n=0)], [record("a::x")])
    assert done.returncode == 4
    assert json.loads(done.stdout.splitlines()[0])["error"] == "validation_failed"
    assert not Report.objects.exists()


def test_a_wrong_token_stops_the_job_at_the_ledger_with_4(recipe, tmp_path):
    done = recipe([measurement("a::x")], [record("a::x")], FLAKEBOARD_TOKEN="fbr_not-a-token")
    assert done.returncode == 4
    assert "error" in json.loads(done.stdout)  # the ledger's answer says why
    assert not (tmp_path / "report-answer.json").exists()
    assert not Report.objects.exists() and not VerdictBatch.objects.exists()


def test_an_unreachable_board_stops_the_job_with_3(recipe, dead_url):
    done = recipe([measurement("a::x")], [record("a::x")], FLAKEBOARD_URL=dead_url)
    assert done.returncode == 3
    assert "Failed to connect" in done.stderr
