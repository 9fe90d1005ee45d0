"""SPEC 2.4d end to end: a generated project with one flaky test of each kind, measured by the
CI client with its experiments and uploaded at a commit, beside CI's JUnit files of that
commit and of others. Each test is diagnosed with its category and its evidence, and the
report's rows say so."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from junit.ingest import junit_ingest
from tests.api_http import new_token
from tests.junit_files import junit_xml
from tests.measure_projects import make_project, measure
from tests.test_ci_measure_diagnosis import DEADLINE

pytestmark = pytest.mark.slow  # it starts the CI client and pytest processes

COMMIT = "c0ffee"
MODULES = {
    # Fails on its random input.
    "tests/test_coin.py": """
        import random


        def test_coin():
            assert random.random() > 0.25
    """,
    # Fails under CPU load, and at one clock microsecond in eight whatever the load.
    "tests/test_deadline.py": DEADLINE,
    # A victim of the test before it; a test that leaks state into its own next run.
    "tests/test_state.py": """
        KEPT = []


        def test_pollutes():
            os.environ["POLLUTED"] = "1"


        def test_victim():
            assert not os.environ.get("POLLUTED"), "polluted"


        def test_leaks():
            KEPT.append(1)
            assert len(KEPT) == 1, "left over from its last run"
    """,
    # Pass wherever measure runs them: CI's JUnit shows their failures.
    "tests/test_ci.py": """
        def test_platform():
            pass


        def test_ci_flaky():
            pass


        def test_fetch():
            pass
    """,
}
COIN, DEADLINE = "tests/test_coin.py::test_coin", "tests/test_deadline.py::test_deadline"
VICTIM, LEAKS = "tests/test_state.py::test_victim", "tests/test_state.py::test_leaks"
PLATFORM, CI_FLAKY, FETCH = ("tests/test_ci.py::test_platform", "tests/test_ci.py::test_ci_flaky",
                             "tests/test_ci.py::test_fetch")
MEASURED = [COIN, DEADLINE, VICTIM, LEAKS, CI_FLAKY]
RESET = "ConnectionResetError: [Errno 104] Connection reset by peer"
JOBS = ("py3.11", "py3.12", "py3.13")


def ci_uploads(suite):
    """CI's JUnit files. At the measured commit, test_ci_flaky fails each job's first
    attempt and passes its second. At five other commits, test_platform fails the first
    attempt in job py3.13 only, and test_fetch fails the first attempt in every job with a
    connection reset; both pass every second attempt."""
    for job in JOBS:
        for attempt, outcome in ((1, "failed"), (2, "passed")):
            junit_ingest(suite=suite, actor="ci", body=junit_xml(
                ("tests.test_ci", "test_ci_flaky", outcome, "AssertionError: assert 0 == 1")),
                query={"commit": COMMIT, "job": job, "attempt": attempt, "branch": "main"})
    for commit in ("c1", "c2", "c3", "c4", "c5"):
        for job in JOBS:
            for attempt in (1, 2):
                first = attempt == 1
                platform = "failed" if first and job == "py3.13" else "passed"
                junit_ingest(suite=suite, actor="ci", body=junit_xml(
                    ("tests.test_ci", "test_platform", platform, "AssertionError: wrong ABI"),
                    ("tests.test_ci", "test_fetch", "failed" if first else "passed", RESET)),
                    query={"commit": commit, "job": job, "attempt": attempt, "branch": "main"})


def test_each_kind_of_flaky_test_is_diagnosed_with_its_evidence(tmp_path, live_server, suite):
    ci_uploads(suite)
    project = make_project(tmp_path / "project", MODULES, MEASURED)
    done = measure(project, "--runs", "40", "--exact", "--upload", "--commit", COMMIT,
                   diagnose=True, timeout=300, FLAKEBOARD_URL=live_server.url,
                   FLAKEBOARD_TOKEN=new_token(suite, "write"))
    assert done.returncode in (0, 1), done.stdout + done.stderr
    nodes = [COIN, DEADLINE, VICTIM, LEAKS, PLATFORM, CI_FLAKY, FETCH]
    api = Client(headers={"Authorization": f"Bearer {new_token(suite, 'read')}"})
    answer = api.post(f"/api/v1/suites/{suite.slug}/diagnoses", json.dumps(nodes),
                      content_type="application/json").json()
    found = {row["node"]: row["diagnosis"] for row in answer["nodes"]}
    categories = {node: (found[node] or {}).get("category") for node in nodes}
    assert categories == {
        COIN: "seeded", DEADLINE: "timing", VICTIM: "order_dependent", LEAKS: "repeat_unsafe",
        PLATFORM: "job_specific", CI_FLAKY: "ci_only", FETCH: "external",
    }, done.stderr + json.dumps(found, indent=1)

    coin = found[COIN]
    assert re.fullmatch(r"python3 \S+flakeboard_ci\.py replay tests/test_coin\.py::test_coin "
                        r"--seed \d+", coin["command"]), coin
    assert "seed replay" in coin["tried"]
    deadline = found[DEADLINE]
    assert "40/40 under CPU load" in deadline["evidence"][0], deadline
    assert deadline["command"].endswith("--stress --runs 40 --seed 9137")
    assert "tests/test_state.py::test_pollutes" in found[VICTIM]["evidence"][0]
    assert "py3.13" in found[PLATFORM]["evidence"][0]
    assert "0/40 measured at the same commits" in found[CI_FLAKY]["evidence"][0]
    assert "Connection reset by peer" in found[FETCH]["evidence"][0]
    # The report's rows say why, under each measured flaky test.
    assert re.search(r"why flaky: seeded \(.*\); reproduce: python3 .*replay "
                     r"tests/test_coin\.py::test_coin --seed \d+", done.stdout), done.stdout
    assert "why flaky: timing" in done.stdout
