"""Which tests make up the test set when a report does not say (SPEC 2.2, as amended in
docs/test-set.md): the tests of CI's own most recent complete run on the default branch.

A *CI run* is one commit's JUnit files on one branch: the jobs that uploaded them and the
distinct tests they name (the union over the jobs, each job's attempts included). Only the
suite's default branch sizes the test set, so a file from any other branch, padded or not,
cannot grow it; and the figure is one commit's, so a test renamed or deleted drops out at
the next run.

*Complete*: CI's jobs of one commit upload one by one, so the newest run may hold only
some of them. A run is complete when its jobs include every job of the last complete run
before it (the first run is complete as it is). A job taken out of CI's matrix would keep
every later run incomplete, so a run whose jobs are those of the runs just before it
(``MATRIX_SETTLES`` in a row) is complete too: that is the new matrix.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from datetime import date
from itertools import islice

from .limits import META_MAX_LENGTH
from .share import KNOWN_NODE_WINDOW, CiRunFacts

DEFAULT_BRANCH = "main"
# Runs older than this do not size the test set: the known nodes do then.
CI_RUN_WINDOW = KNOWN_NODE_WINDOW
# The default branch's most recent runs the choice looks at.
CI_RUNS_READ = 20
# Runs in a row with the same jobs: CI's matrix, even with a job fewer than before.
MATRIX_SETTLES = 3


def _settled(oldest_first: Sequence[CiRunFacts], index: int) -> bool:
    """The run at ``index`` and the MATRIX_SETTLES - 1 runs before it have the same jobs."""
    if index < MATRIX_SETTLES - 1:
        return False
    jobs = oldest_first[index].jobs
    return all(run.jobs == jobs for run in oldest_first[index - MATRIX_SETTLES + 1 : index])


def sizing_run(runs: Sequence[CiRunFacts]) -> CiRunFacts | None:
    """The run that sizes the test set: the most recent complete one among ``runs`` (one
    branch's, newest first), leaving out runs that name no test. None when there is none."""
    oldest_first = [run for run in reversed(runs) if run.tests > 0]
    chosen = None
    for index, run in enumerate(oldest_first):
        if chosen is None or run.jobs >= chosen.jobs or _settled(oldest_first, index):
            chosen = run
    return chosen


def sizing_run_on(day: date, runs: Sequence[CiRunFacts]) -> CiRunFacts | None:
    """The run that sized the test set at the end of ``day``, from one branch's runs
    (newest first by their first file): among the runs begun by then whose last file is
    within CI_RUN_WINDOW of the day, the newest CI_RUNS_READ decide (``sizing_run``). On
    today it is the run the board reads (``selectors.ci_sizing_run``)."""
    begun = [-(run.first_day or run.day).toordinal() for run in runs]
    start = bisect_left(begun, -day.toordinal())
    recent = (run for run in runs[start:] if CI_RUN_WINDOW.contains(run.day, day))
    return sizing_run(list(islice(recent, CI_RUNS_READ)))


# git check-ref-format's rules for a branch name, as far as a name typed into a form goes.
_BRANCH_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


def branch_problem(name: str) -> str | None:
    """Why ``name`` cannot be a git branch's name (None: it can)."""
    if not name:
        return "A branch name is required."
    if len(name) > META_MAX_LENGTH:
        return f"A branch name has at most {META_MAX_LENGTH} characters."
    if _BRANCH_FORBIDDEN.search(name):
        return "A branch name has no spaces, control characters or any of ~ ^ : ? * [ \\."
    if ".." in name or "@{" in name or "//" in name or name == "@":
        return 'A branch name holds no "..", "@{" or "//", and is not "@".'
    if name.startswith(("/", "-")) or name.endswith(("/", ".", ".lock")):
        return ('A branch name does not start with "/" or "-", nor end with "/", "." '
                'or ".lock".')
    if any(part.startswith(".") for part in name.split("/")):
        return 'No part of a branch name starts with ".".'
    return None
