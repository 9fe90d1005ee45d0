"""The CI client's outputs where CI users look (--format, failures first, GitHub annotations
and job summary, GitLab log sections and Code Quality), run against the live board on real
hostile node ids from tests/corpus/nodeids."""

from __future__ import annotations

import json
import os
import re
from datetime import timedelta
from pathlib import Path

import pytest

from ledger.quarantine import quarantine_create
from runs.models import Report
from tests.ci_client_view import first_paragraph, markdown_tables, workflow_commands
from tests.helpers import measurement, node_page, record, write_upload
from tests.test_nodeid_corpus import ALL_IDS

pytestmark = pytest.mark.slow  # each test starts a real process

PY38 = Path.home() / ".pyenv" / "versions" / "3.8.18" / "bin" / "python3"
GITHUB = {"GITHUB_ACTIONS": "true"}


def corpus_id(why, test):
    """The first real id of the corpus for which test(id) holds; why says what it holds."""
    found = next((nodeid for nodeid in ALL_IDS if test(nodeid)), None)
    assert found, f"the corpus has no id with {why}"
    return found


def params(nodeid):
    return nodeid.split("::")[-1]


# Each one breaks a workflow command or a Markdown table in its own way.
HOSTILE = [
    corpus_id("a percent sign and brackets", lambda n: "%" in n and "[" in params(n)),
    corpus_id("percent-encoded text", lambda n: "%2C" in n),
    corpus_id("a comma", lambda n: ", " in n),
    corpus_id("a colon in its parameters", lambda n: "://" in params(n)),
    corpus_id("an escaped newline", lambda n: "\\n" in n),
    corpus_id("a pipe", lambda n: "|" in n),
    corpus_id("an asterisk and parentheses", lambda n: "**" in n),
    corpus_id("a less-than sign", lambda n: "<" in n),
    corpus_id("an ampersand entity", lambda n: "&amp;" in n),
    corpus_id("a doubled backslash", lambda n: "\\\\" in n),
    corpus_id("a hash", lambda n: "#" in n and "&" not in n),
    corpus_id("a line separator", lambda n: "\u2028" in n),
]
WARNED = corpus_id("an underscore and brackets", lambda n: "_" in params(n) and "[" in n
                   and n not in HOSTILE)


@pytest.fixture
def quarantined(suite, today):
    suite.max_quarantined_share = 1.0
    suite.save()
    quarantine_create(suite=suite, nodeid=WARNED, owner="@finley", evidence="ci/run-1",
                      expires=today + timedelta(days=10), actor="@finley", today=today)
    return WARNED


@pytest.fixture
def mixed_report(tmp_path, quarantined):
    """A report with an OK row first, then a WARN, then a FAIL: the order a board may list."""
    return write_upload(tmp_path, "flake-report.json", [
        measurement("tests/a.py::test_ok"), measurement(quarantined, fails=5),
        measurement(HOSTILE[0], fails=5)])


def test_github_annotates_hostile_ids_escaped_and_writes_the_job_summary(
        run, tmp_path, quarantined):
    rows = [measurement(nodeid, fails=5) for nodeid in HOSTILE]
    rows += [measurement(quarantined, fails=5), measurement("tests/a.py::test_ok")]
    summary = tmp_path / "summary.md"
    summary.write_text("# Earlier step output\n\n")
    done = run("report", write_upload(tmp_path, "r.json", rows),
               GITHUB_STEP_SUMMARY=str(summary), **GITHUB)
    assert done.returncode == 1, done.stderr
    url = next(line for line in done.stdout.split("\n") if line.startswith("http"))
    assert f"/reports/{Report.objects.get().pk}/" in url
    commands = workflow_commands(done.stdout)
    errors = [c for c in commands if c[0] == "error"]
    assert len(errors) == 10
    for (_, props, message), nodeid in zip(errors, HOSTILE, strict=False):
        assert props == {"file": nodeid.split("::")[0], "title": f"Flakeboard FAIL {nodeid}"}
        assert message.startswith(f"FAIL {nodeid}: over_budget")
    assert [c[:2] for c in commands[10:11]] == [
        ("warning", {"file": WARNED.split("::")[0], "title": f"Flakeboard WARN {WARNED}"})]
    assert commands[11][0] == "notice" and "2 more" in commands[11][2]
    assert "job summary" in commands[11][2] and url in commands[11][2]
    # The exact escaping, on the ids that need it.
    percent = next(line for line in done.stdout.split("\n") if line.startswith("::error")
                   and HOSTILE[0].split("%")[0].replace(":", "%3A") in line)
    left, right = HOSTILE[0].split("%", 1)
    assert f"title=Flakeboard FAIL {left.replace(':', '%3A')}%25{right}".replace(
        ",", "%2C") in percent
    assert f"::FAIL {left}%25{right}: over_budget" in percent
    comma = next(line for line in done.stdout.split("\n") if line.startswith("::error")
                 and "%2C " in line and HOSTILE[2].split(", ")[1] in line)
    assert HOSTILE[2] in comma.split("::", 2)[2]  # a message keeps its commas and colons
    # The job summary: appended, and each id's text intact in its table cell.
    text = summary.read_text()
    assert text.startswith("# Earlier step output\n\n**Flakeboard: report FAIL**")
    failing = markdown_tables(text)[1]
    assert [row[0] for row in failing] == [*HOSTILE, WARNED]
    assert [row[1] for row in failing] == ["FAIL"] * len(HOSTILE) + ["WARN"]


def test_errors_are_annotated_worst_first(run, tmp_path):
    holds = [record(f"tests/h.py::test_hold[{i}]", lock="drifted") for i in range(8)]
    rejects = [record(f"tests/r.py::test_reject[{i}]", prop="fail") for i in range(8)]
    done = run("signals", write_upload(tmp_path, "s.json", holds + rejects), **GITHUB)
    assert done.returncode == 1, done.stderr
    commands = workflow_commands(done.stdout)
    assert [(c[0], c[1]["file"]) for c in commands[:10]] == \
        [("error", "tests/r.py")] * 8 + [("error", "tests/h.py")] * 2
    assert commands[10][0] == "notice" and commands[10][2].startswith("6 more")
    assert len(commands) == 11


def test_text_lists_failures_first_then_warnings_then_a_count(run, mixed_report):
    done = run("report", mixed_report)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.split("\n")
    assert lines[0].startswith(f"FAIL {HOSTILE[0]}: over_budget")
    assert lines[1].startswith(f"WARN {WARNED}: quarantined (upper95=")
    assert lines[2] == "1 OK, not listed (--all lists them)"
    assert lines[3].startswith("report FAIL (over_budget): 3 measurements, 1 FAIL, 1 WARN")
    assert lines[-2:] == ["exit code 1", ""]
    listed = run("report", mixed_report, "--all").stdout.split("\n")
    assert listed[2].startswith("OK   tests/a.py::test_ok: within_budget")


def test_only_failures_leaves_out_warnings_and_the_passing_count(run, mixed_report):
    done = run("report", mixed_report, "--only-failures")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.split("\n")
    assert lines[0].startswith(f"FAIL {HOSTILE[0]}")
    assert lines[1].startswith("report FAIL (over_budget)")
    assert "WARN " not in done.stdout and "OK," not in done.stdout
    assert lines[-2] == "exit code 1"


def test_json_prints_the_boards_answer_and_nothing_else(run, tmp_path, board, suite, token):
    name = write_upload(tmp_path, "r.json", [measurement(HOSTILE[4], fails=5)])
    done = run("report", name, "--format", "json", **GITHUB)
    assert done.returncode == 1, done.stderr
    assert done.stdout.endswith("}\n") and done.stdout.count("\n") == 1
    again = board.report(suite.slug, token, (tmp_path / name).read_bytes()).json
    assert json.loads(done.stdout) == {**again, "duplicate": False, "repeats_attempt": None}


def test_markdown_puts_the_verdict_first_and_failing_rows_in_a_table(run, tmp_path):
    records = [record("a::ok"), record(HOSTILE[5], lock="drifted"),
               record(HOSTILE[9], prop="fail")]
    done = run("signals", write_upload(tmp_path, "s.json", records), "--format", "markdown")
    assert done.returncode == 1, done.stderr
    assert first_paragraph(done.stdout).startswith(
        "Flakeboard: batch REJECT (property_fail) \u2014 3 records; ")
    assert first_paragraph(done.stdout).endswith("; exit code 1")
    counts, rows = markdown_tables(done.stdout)
    assert counts == [["REJECT", "1"], ["HOLD", "1"], ["ACCEPT", "1"]]
    # A failed node's reason says why it failed, as far as the board knows.
    assert [row[:3] for row in rows] == [
        [HOSTILE[9], "REJECT", "property_fail \u2014 new failure: no result of it on the "
                               "default branch and no flaky evidence, so probably caused by "
                               "this change"],
        [HOSTILE[5], "HOLD", "fixture_drifted"]]
    links = re.findall(r"\[node\]\(http://[^/)]+([^)]+)\)", done.stdout)  # each its node's page
    assert links == [node_page("acme", HOSTILE[9]), node_page("acme", HOSTILE[5])]
    assert not [line for line in done.stdout.split("\n")  # no text-format lines
                if line == "exit code 1" or line.startswith(("http", "REJECT "))]


@pytest.mark.parametrize(("env", "args", "marker"), [
    (GITHUB, (), "::error file="),
    ({"GITLAB_CI": "true"}, (), "\x1b[0Ksection_start:"),
    ({"GITHUB_ACTIONS": "true", "GITLAB_CI": "true"}, ("--format", "text"), None),
    ({"GITLAB_CI": "true"}, ("--format", "text"), None),
    ({"GITHUB_ACTIONS": "1"}, (), None),
])
def test_the_format_follows_the_ci_unless_given(run, mixed_report, env, args, marker):
    done = run("report", mixed_report, *args, **env)
    assert done.returncode == 1, done.stderr
    for other in ("::error file=", "\x1b[0Ksection_start:"):
        assert (other in done.stdout) == (other == marker)


def test_gitlab_sections_and_code_quality(run, tmp_path, mixed_report):
    done = run("report", mixed_report, "--codequality", "gl-code-quality.json",
               GITLAB_CI="true")
    assert done.returncode == 1, done.stderr
    # Text mode reads the markers' \r as a line end (their exact bytes: the unit tests).
    starts = re.findall(r"\x1b\[0Ksection_start:\d+:([\w.-]+)(\[collapsed=true\])?\n\x1b\[0K",
                        done.stdout)
    ends = re.findall(r"\x1b\[0Ksection_end:\d+:([\w.-]+)\n\x1b\[0K", done.stdout)
    assert starts == [("flakeboard_report", ""), ("flakeboard_report_passing",
                                                  "[collapsed=true]")]
    assert ends == [name for name, _ in starts]
    assert done.stdout.index(f"FAIL {HOSTILE[0]}") < done.stdout.index("section_end") < \
        done.stdout.index("1 OK, not listed")
    issues = json.loads((tmp_path / "gl-code-quality.json").read_text())
    assert [(i["severity"], i["location"]) for i in issues] == [
        ("critical", {"path": HOSTILE[0].split("::")[0], "lines": {"begin": 1}}),
        ("minor", {"path": WARNED.split("::")[0], "lines": {"begin": 1}})]
    assert [i["check_name"] for i in issues] == ["flakeboard/over_budget",
                                                 "flakeboard/quarantined"]
    assert issues[0]["description"].startswith(f"FAIL {HOSTILE[0]}: over_budget")
    assert all(re.fullmatch("[0-9a-f]{64}", i["fingerprint"]) for i in issues)
    run("report", mixed_report, "--codequality", "again.json", "--format", "json")
    assert [i["fingerprint"] for i in json.loads((tmp_path / "again.json").read_text())] == \
        [i["fingerprint"] for i in issues]


@pytest.mark.skipif(not os.access(PY38, os.X_OK), reason="no Python 3.8 at ~/.pyenv")
@pytest.mark.parametrize("fmt", ["text", "github", "gitlab", "markdown", "json"])
def test_the_client_runs_on_python_3_8(run, tmp_path, mixed_report, fmt):
    summary = tmp_path / "summary.md"
    done = run("report", mixed_report, "--format", fmt, "--codequality", "cq.json",
               python=str(PY38), GITHUB_STEP_SUMMARY=str(summary))
    assert done.returncode == 1, done.stderr
    if fmt == "json":
        assert json.loads(done.stdout)["measurements"][2]["nodeid"] == HOSTILE[0]
    elif fmt == "markdown":
        assert markdown_tables(done.stdout)[1][0][0] == HOSTILE[0]
    else:
        assert f"FAIL {HOSTILE[0]}: over_budget" in done.stdout
    assert len(json.loads((tmp_path / "cq.json").read_text())) == 2
    assert summary.exists() == (fmt == "github")
