"""The docs' CI recipes: the curl job of docs/api.md, run with sh against the live board as a
CI job runs it; and the README's GitHub Actions and GitLab CI jobs, each command line of the
client parsed by the client's own parser."""

import json
import re
import shlex
import shutil
import subprocess
import sys

import pytest
import yaml

from runs.models import Report, VerdictBatch
from tests.api_http import new_token
from tests.ci_client_view import load_client
from tests.docs_text import doc_names, doc_tokens, fenced_blocks_under, marked_block
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




def docs_recipe() -> str:
    """The curl job as docs/api.md shows it."""
    return marked_block("docs/api.md", "ci-recipe")


@pytest.fixture
def recipe(live_server, suite, tmp_path):
    """recipe(report, signals, **env) runs docs/api.md's recipe with sh in tmp_path, with the
    two upload files and a CI job's environment."""
    # --url-query is curl 7.87's, -w '%header{}' 7.84's.
    if curl_version() < (7, 87):
        pytest.skip("needs curl 7.87 or newer")

    def run_recipe(report, signals, **env):
        write(tmp_path, "flake-report.json", report)
        write(tmp_path, "signals.json", signals)
        environment = {"PATH": "/usr/bin:/bin", "FLAKEBOARD_URL": live_server.url,
                       "FLAKEBOARD_SUITE": suite.slug,
                       "FLAKEBOARD_TOKEN": new_token(suite, "write"),
                       "COMMIT": "abc123", "BRANCH": "main", **env}
        return subprocess.run(["sh", "-c", docs_recipe()], cwd=tmp_path, env=environment,
                              capture_output=True, text=True, timeout=60)

    return run_recipe


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_refused_upload_exits_4(recipe):
    done = recipe([measurement("a::x", n=0)], [record("a::x")])
    assert done.returncode == 4
    assert json.loads(done.stdout.splitlines()[0])["error"] == "validation_failed"
    assert not Report.objects.exists()


@pytest.mark.slow
def test_a_wrong_token_stops_the_job_at_the_ledger_with_4(recipe, tmp_path):
    done = recipe([measurement("a::x")], [record("a::x")], FLAKEBOARD_TOKEN="fbr_not-a-token")
    assert done.returncode == 4
    assert "error" in json.loads(done.stdout)  # the ledger's answer says why
    assert not (tmp_path / "report-answer.json").exists()
    assert not Report.objects.exists() and not VerdictBatch.objects.exists()


@pytest.mark.slow
def test_an_unreachable_board_stops_the_job_with_3(recipe, dead_url):
    done = recipe([measurement("a::x")], [record("a::x")], FLAKEBOARD_URL=dead_url)
    assert done.returncode == 3
    assert "Failed to connect" in done.stderr


# The README's CI jobs, and every client command the docs show: each line that runs the
# client must name a real command and real options, as the client's own parser reads them.

CLIENT_DOWNLOAD = 'curl -fsSO "$FLAKEBOARD_URL/ci/flakeboard_ci.py"'
CI_VARIABLE = re.compile(r"\$\{\{[^}]*\}\}|\$\{?\w+\}?")


def logical_lines(script: str) -> list[str]:
    """A shell script's command lines, continuations joined."""
    return [line.strip() for line in script.replace("\\\n", " ").splitlines() if line.strip()]


def client_argv(line: str) -> list[str] | None:
    """The arguments of a line that runs the client (after any VAR=value), with every CI
    variable or expression given the value 1; None for a line that does not run it."""
    if "flakeboard_ci.py" not in line:
        return None
    words = shlex.split(CI_VARIABLE.sub("1", line), comments=True)
    while words and re.fullmatch(r"\w+=.*", words[0]):
        words = words[1:]
    if len(words) >= 2 and words[0].startswith("python") and words[1] == "flakeboard_ci.py":
        return words[2:]
    return None


def client_commands(scripts) -> list[list[str]]:
    found = [client_argv(line) for script in scripts for line in logical_lines(script)]
    return [argv for argv in found if argv is not None]


@pytest.fixture(scope="module")
def parse_client():
    """parse(argv): the client's own parse_args, failing the test on an error it reports."""
    client = load_client()

    def parse(argv):
        try:
            return client.parse_args(argv)
        except SystemExit as exc:
            pytest.fail(f"flakeboard_ci.py {shlex.join(argv)}: the client refuses it ({exc})")

    return parse


@pytest.fixture(scope="module")
def pytest_options(tmp_path_factory) -> set[str]:
    """Every option pytest's --help names, outside this project's configuration. It
    starts pytest, so the tests that ask for it are slow."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--help", "-p", "no:django"],
                          capture_output=True, text=True, timeout=120, check=True,
                          cwd=tmp_path_factory.mktemp("pytest-help"))
    return set(re.findall(r"(?<![\w-])--?[\w][\w-]*", done.stdout))


def check_commands(commands, parse_client, pytest_options) -> dict:
    """Each command parsed; gate's pytest arguments checked against pytest's options.
    Answers the parsed arguments by command name."""
    parsed = {}
    for argv in commands:
        args = parse_client(argv)
        if args.command == "gate":
            unknown = [a for a in args.pytest_args
                       if a.startswith("-") and a.split("=")[0] not in pytest_options]
            assert not unknown, f"gate passes pytest options pytest does not have: {unknown}"
        parsed[args.command] = args
    return parsed


def readme_job(heading: str) -> dict:
    (block,) = fenced_blocks_under("README.md", heading)
    assert block.info == "yaml"
    return yaml.safe_load(block.content)


@pytest.mark.slow
def test_the_github_actions_job(parse_client, pytest_options):
    workflow = readme_job("GitHub Actions")
    (job,) = workflow["jobs"].values()
    assert {"FLAKEBOARD_URL", "FLAKEBOARD_SUITE", "FLAKEBOARD_TOKEN"} <= set(job["env"])
    assert "secrets." in job["env"]["FLAKEBOARD_TOKEN"]
    runs = [step["run"] for step in job["steps"] if "run" in step]
    assert CLIENT_DOWNLOAD in runs
    parsed = check_commands(client_commands(runs), parse_client, pytest_options)
    assert set(parsed) == {"gate", "junit"}
    gate = parsed["gate"]
    assert gate.upload and gate.measure and gate.patch and gate.commit
    checkout = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout"))
    assert not gate.diff or checkout["with"]["fetch-depth"] == 0  # git diff needs the base
    assert "--junit-xml=" + parsed["junit"].files[0] in gate.pytest_args


@pytest.mark.slow
def test_the_gitlab_ci_job(parse_client, pytest_options):
    (job,) = readme_job("GitLab CI").values()
    assert {"FLAKEBOARD_URL", "FLAKEBOARD_SUITE"} <= set(job["variables"])
    scripts = job.get("before_script", []) + job["script"] + job.get("after_script", [])
    assert CLIENT_DOWNLOAD in scripts
    parsed = check_commands(client_commands(scripts), parse_client, pytest_options)
    assert set(parsed) == {"gate", "junit"}
    gate = parsed["gate"]
    assert gate.upload and gate.measure and gate.patch and gate.commit
    assert not gate.diff or job["variables"]["GIT_DEPTH"] == 0
    reports = job["artifacts"]["reports"]
    assert reports["codequality"] == gate.codequality
    assert reports["junit"] == parsed["junit"].files[0]
    assert "--junit-xml=" + reports["junit"] in gate.pytest_args


@pytest.mark.slow
def test_the_default_branch_job_uploads_its_junit_with_its_branch(parse_client,
                                                                   pytest_options):
    """The test set is the default branch's CI run: docs/test-set.md's job for pushes to
    main uploads each run's JUnit with the branch and the job named."""
    (block,) = fenced_blocks_under("docs/test-set.md", "Wiring it")
    workflow = yaml.safe_load(block.content)
    assert workflow[True]["push"]["branches"] == ["main"]  # YAML 1.1 reads "on" as True
    (job,) = workflow["jobs"].values()
    runs = [step["run"] for step in job["steps"] if "run" in step]
    assert CLIENT_DOWNLOAD in runs
    parsed = check_commands(client_commands(runs), parse_client, pytest_options)
    junit = parsed["junit"]
    assert junit.branch and junit.job and junit.commit
    upload = next(run for run in runs if " junit " in run)
    assert '--branch "$GITHUB_REF_NAME"' in upload  # the pushed branch's name
    assert any(f"--junit-xml={junit.files[0]}" in run for run in runs)


def shell_blocks() -> list[tuple[str, str]]:
    return [(name, token.content) for name in doc_names() for token in doc_tokens(name)
            if token.type == "fence" and token.info in ("sh", "")]


@pytest.mark.slow
def test_every_client_command_in_the_docs_parses(parse_client, pytest_options):
    commands = {}
    for name, script in shell_blocks():
        commands.setdefault(name, []).extend(client_commands([script]))
    assert len(commands["docs/ci-client.md"]) >= 8
    for found in commands.values():
        check_commands(found, parse_client, pytest_options)
