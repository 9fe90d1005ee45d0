"""Which CI run sizes the test set (flakeboard/rules/ci_run.py): the most recent complete
run of the default branch, complete once it holds every job of the complete run before
it, or once CI's matrix has settled on fewer jobs; and a branch name as git allows it."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakeboard.rules import MATRIX_SETTLES, CiRunFacts, branch_problem, size_words, sizing_run

DAY = date(2026, 12, 1)


def run(commit: str, jobs: str, tests: int = 100) -> CiRunFacts:
    return CiRunFacts(commit, "main", frozenset(jobs.split(",")) if jobs else frozenset(),
                      tests, DAY)


def newest_first(*runs: CiRunFacts) -> list[CiRunFacts]:
    """Runs written oldest first, as a story reads; the rule takes them newest first."""
    return list(reversed(runs))


@pytest.mark.parametrize(("story", "chosen"), [
    ([], None),
    ([("c1", "a", 10)], "c1"),
    ([("c1", "a,b", 10), ("c2", "a,b", 9)], "c2"),
    # The newest run has one job of two so far: the run before it still decides.
    ([("c1", "a,b", 10), ("c2", "a", 5)], "c1"),
    # Its second job has come: complete, and a test deleted is gone.
    ([("c1", "a,b", 10), ("c2", "a,b", 8), ("c3", "a", 4)], "c2"),
    # A job more than before is complete too.
    ([("c1", "a", 10), ("c2", "a,b", 12)], "c2"),
    # A run cut short before a complete one does not decide once a complete one comes.
    ([("c1", "a", 4), ("c2", "a,b", 10)], "c2"),
    # Job b left the matrix: three runs in a row without it are the new matrix.
    ([("c1", "a,b", 10), ("c2", "a", 6), ("c3", "a", 6)], "c1"),
    ([("c1", "a,b", 10), ("c2", "a", 6), ("c3", "a", 6), ("c4", "a", 7)], "c4"),
    # A run naming no test never decides.
    ([("c1", "a", 10), ("c2", "a", 0)], "c1"),
    ([("c1", "a", 0)], None),
], ids=["none", "one", "two-alike", "partial-newest", "deleted-tests", "job-added",
        "cut-short-first", "matrix-shrinking", "matrix-settled", "empty-run", "only-empty"])
def test_the_run_that_sizes_the_test_set(story, chosen):
    runs = newest_first(*(run(*facts) for facts in story))
    found = sizing_run(runs)
    assert (found.commit if found else None) == chosen


JOBS = st.frozensets(st.sampled_from("abcd"), min_size=1)
RUNS = st.lists(st.builds(lambda jobs, tests: (jobs, tests), JOBS,
                          st.integers(min_value=0, max_value=50)), max_size=12)


def facts(story) -> list[CiRunFacts]:
    """Oldest first, each with its own commit."""
    return [CiRunFacts(f"c{i}", "main", jobs, tests, DAY + timedelta(days=i))
            for i, (jobs, tests) in enumerate(story)]


@given(RUNS)
def test_the_chosen_run_is_one_of_them_and_names_tests(story):
    runs = facts(story)
    found = sizing_run(list(reversed(runs)))
    if any(r.tests for r in runs):
        assert found in runs and found.tests > 0
    else:
        assert found is None


@given(RUNS, JOBS, st.integers(min_value=1, max_value=50))
def test_a_newest_run_holding_every_job_seen_decides(story, jobs, tests):
    runs = facts(story)
    every = frozenset().union(jobs, *(r.jobs for r in runs))
    newest = CiRunFacts("new", "main", every, tests, DAY)
    assert sizing_run([newest, *reversed(runs)]) == newest


@given(RUNS, st.integers(min_value=1, max_value=50))
def test_a_newest_run_missing_a_job_of_the_chosen_one_changes_nothing(story, tests):
    """Until it settles as the matrix: a job's file still on its way never moves the
    figure."""
    runs = facts(story)
    chosen = sizing_run(list(reversed(runs)))
    if chosen is None or len(chosen.jobs) < 2:
        return
    fewer = frozenset(sorted(chosen.jobs)[1:])
    recent = [r.jobs for r in runs if r.tests][-(MATRIX_SETTLES - 1):]
    if len(recent) == MATRIX_SETTLES - 1 and all(jobs == fewer for jobs in recent):
        return
    partial = CiRunFacts("new", "main", fewer, tests, DAY)
    assert sizing_run([partial, *reversed(runs)]) == chosen


@pytest.mark.parametrize("name", ["main", "master", "release/2.x", "feature/issue-34",
                                  "v1.2", "dependabot/pip/django-6.1"])
def test_a_branch_name_git_allows(name):
    assert branch_problem(name) is None


@pytest.mark.parametrize("name", ["", "has space", "a..b", "a//b", "/main", "main/",
                                  "main.", "main.lock", "-main", "@", "a@{1}", "x:y",
                                  "what?", "star*", "br[", "back\\slash", ".hidden",
                                  "a/.b", "tab\there", "b" * 201])
def test_a_branch_name_git_refuses(name):
    assert branch_problem(name)


@pytest.mark.parametrize(("size", "source", "branch", "words"), [
    (375, "ci_run", "main", "375 tests CI ran on main"),
    (1, "ci_run", "", "1 test CI ran"),
    (12, "selected_total", "", "12 selected tests"),
    (4, "known_nodes", "", "4 known nodes"),
    (4, "", "", "4 known nodes"),
])
def test_the_test_set_in_words(size, source, branch, words):
    assert size_words(size, source, branch) == words
