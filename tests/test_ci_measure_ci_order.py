"""`measure --commit` checks a target where CI ran it: where the board holds a JUnit file of
the commit that lists the target, the session check runs the tests CI ran before it in that
file's order (not the collection's), and the result line says what CI saw there. Without
the board's order, the collection's stands, and measure says why."""

from __future__ import annotations

import pytest

from junit.ingest import junit_ingest
from tests.api_http import new_token
from tests.junit_files import junit_xml
from tests.measure_projects import make_project, measure
from tests.test_ci_measure_cause import NEEDS_READY, SETS_READY, result_lines

pytestmark = pytest.mark.slow  # each test starts a real process

# Collected first, the tests of test_a.py; CI ran test_z.py's first (a shuffled order, or
# another rootdir's): only CI's order sets READY and POLLUTED before test_a.py's tests.
MODULES = {
    "tests/test_a.py": NEEDS_READY + """

    def test_victim():
        assert not os.environ.get("POLLUTED"), "polluted"
""",
    "tests/test_z.py": SETS_READY + """

    def test_pollutes():
        os.environ["POLLUTED"] = "1"
""",
}
NEEDS, VICTIM = "tests/test_a.py::test_needs_setup", "tests/test_a.py::test_victim"
SETTER, POLLUTER = "tests/test_z.py::test_sets_up", "tests/test_z.py::test_pollutes"
# CI's file, as pytest wrote it: test_z.py's tests, then test_a.py's.
CI_RAN = [("tests.test_z", "test_first", "passed"), ("tests.test_z", "test_sets_up", "passed"),
          ("tests.test_z", "test_pollutes", "passed"), ("tests.test_a", "test_other", "passed"),
          ("tests.test_a", "test_needs_setup", "passed"),
          ("tests.test_a", "test_victim", "failed", "polluted")]


@pytest.fixture
def project(tmp_path):
    return make_project(tmp_path / "project", MODULES, [NEEDS, VICTIM])


@pytest.fixture
def ask_board(live_server, suite):
    """measure's environment for the live board, with a read token."""
    return {"FLAKEBOARD_URL": live_server.url, "FLAKEBOARD_TOKEN": new_token(suite, "read")}


def ci_uploads(suite, cases, commit="c0ffee", job="py312"):
    junit_ingest(suite=suite, body=junit_xml(*cases), actor="ci",
                 query={"commit": commit, "job": job, "attempt": 1, "branch": "main"})


def test_a_target_is_checked_where_ci_ran_it(project, suite, ask_board):
    ci_uploads(suite, CI_RAN)
    done = measure(project, "--runs", "6", "--commit", "c0ffee", **ask_board)
    lines = result_lines(done.stderr)
    # Fails alone and after its module; passes after CI's order: the state-setter is named.
    assert lines[NEEDS].split()[0] == "order_dependent", done.stderr
    assert (f"passes only after {SETTER} (state-setter). Fails alone and after the tests "
            "before it in its module, but passes after the tests before it in CI's order: "
            "it needs state one of them sets (AssertionError: nothing set up). CI saw it "
            "pass there (job py312, attempt 1 at c0ffee)") in lines[NEEDS]
    # Passes on its own and after the collection's order; fails after CI's: a victim.
    assert lines[VICTIM].split()[0] == "order_dependent", done.stderr
    assert f"fails only after {POLLUTER} (polluter)" in lines[VICTIM]
    assert "in CI's order" in lines[VICTIM]
    assert "CI saw it fail there (job py312, attempt 1 at c0ffee)" in lines[VICTIM]
    assert (f"ORDER {NEEDS}: CI's order from its JUnit (job py312, attempt 1 at c0ffee), "
            "4 tests before it") in done.stderr


def test_without_cis_order_the_collections_stands(project, suite, ask_board):
    ci_uploads(suite, CI_RAN)
    # The same project without --commit: the session's order puts nothing before them.
    done = measure(project, "--runs", "6", **ask_board)
    lines = result_lines(done.stderr)
    assert lines[NEEDS].split()[0] == "broken", done.stderr
    assert "in its module and in the session" in lines[NEEDS]
    assert lines[VICTIM].split()[0] == "stable", done.stderr
    assert "CI's order" not in done.stderr and "ORDER" not in done.stderr


def test_a_test_ci_ran_that_is_not_collected_here_is_left_out(project, suite, ask_board):
    renamed = ("tests.test_z", "test_renamed_since", "passed")
    ci_uploads(suite, [renamed, *CI_RAN])
    done = measure(project, "--runs", "6", "--commit", "c0ffee", **ask_board)
    assert result_lines(done.stderr)[NEEDS].split()[0] == "order_dependent", done.stderr
    assert (f"ORDER {NEEDS}: CI's order from its JUnit (job py312, attempt 1 at c0ffee), "
            "4 tests before it (1 of CI's not collected here)") in done.stderr


@pytest.mark.parametrize(("commit", "board", "why"), [
    ("c9", "live", "the board holds no JUnit of c9 that lists it"),
    ("c0ffee", "dead", "the board could not be asked"),
    ("c0ffee", "read token of another suite", "the board refused the question (403)"),
])
def test_when_the_board_cannot_say_measure_says_so_and_goes_on(
        project, suite, ask_board, dead_url, other_suite, commit, board, why):
    ci_uploads(suite, CI_RAN)
    env = dict(ask_board)
    if board == "dead":
        env["FLAKEBOARD_URL"] = dead_url
    elif board != "live":
        env["FLAKEBOARD_TOKEN"] = new_token(other_suite, "read")
    done = measure(project, "--runs", "6", "--commit", commit, FLAKEBOARD_SUITE=suite.slug,
                   **env)
    assert (f"flakeboard: CI's order is unknown for every target ({why}") in done.stderr
    assert "checked in the session's collection order" in done.stderr
    # Measured all the same: 6 runs are under min_runs, so the gate FAILs (1), not a usage
    # error (64) or an unreachable board (3).
    assert done.returncode == 1, done.stderr
    assert result_lines(done.stderr)[NEEDS].split()[0] == "broken"


def test_targets_of_two_of_cis_files_are_each_checked_in_their_files_order(
        project, suite, ask_board):
    ci_uploads(suite, CI_RAN, job="py312")
    # Another job ran test_a.py first: the victim passed there, so its order is this one's;
    # test_needs_setup failed there, so its order is still py312's.
    ci_uploads(suite, [CI_RAN[3], ("tests.test_a", "test_needs_setup", "failed", "no setup"),
                       ("tests.test_a", "test_victim", "passed"), *CI_RAN[:3]], job="py311")
    done = measure(project, "--runs", "6", "--commit", "c0ffee", **ask_board)
    lines = result_lines(done.stderr)
    assert (f"ORDER {NEEDS}: CI's order from its JUnit (job py312, attempt 1 at c0ffee), "
            "4 tests before it") in done.stderr
    assert (f"ORDER {VICTIM}: CI's order from its JUnit (job py311, attempt 1 at c0ffee), "
            "2 tests before it") in done.stderr
    assert lines[NEEDS].split()[0] == "order_dependent", done.stderr
    assert lines[VICTIM].split()[0] == "stable", done.stderr
