"""CI's runs that size the test set (docs/test-set.md): each JUnit file's tests added to
its commit's run on the suite's default branch. Called by the JUnit upload, inside its
transaction and under the suite's lock, so two files of one commit never race.

A run keeps its tests' node keys (``members``) while it is among the branch's
``MEMBERS_KEPT`` newest runs, so that each job's file adds only the tests no other job of
the commit named. A file of an older run, whose keys were let go, can only raise the count
to its own number of tests: the union of a commit's files never shrinks.
"""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Collection
from datetime import datetime

from .models import CiRun, Suite

MEMBERS_KEPT = 5


def members_packed(nodes: Collection[int]) -> bytes:
    """Node keys, sorted and stored as the gaps between them, compressed."""
    gaps, last = array("q"), 0
    for node in sorted(nodes):
        gaps.append(node - last)
        last = node
    return zlib.compress(gaps.tobytes(), 6)


def members_unpacked(packed: bytes) -> set[int]:
    gaps = array("q")
    gaps.frombytes(zlib.decompress(packed))
    nodes, last = set(), 0
    for gap in gaps:
        last += gap
        nodes.add(last)
    return nodes


def ci_run_add(suite: Suite, *, branch: str, commit: str, job: str, nodes: Collection[int],
               at: datetime) -> CiRun | None:
    """Add one JUnit file's tests (their node keys) to its commit's run, when the file is
    from the suite's default branch; a file from any other branch adds nothing (None)."""
    if branch != suite.default_branch:
        return None
    run = CiRun.objects.filter(suite=suite, branch=branch, commit=commit).first()
    if run is None:
        run = CiRun(suite=suite, branch=branch, commit=commit, first_at=at,
                    members=members_packed(()))
        _let_go_of_older(suite, branch)
    if run.members is None:
        run.tests = max(run.tests, len(nodes))
    else:
        members = members_unpacked(bytes(run.members)) | set(nodes)
        run.tests, run.members = len(members), members_packed(members)
    run.jobs = sorted({*run.jobs, job})
    run.files += 1
    run.last_at = at if run.last_at is None else max(run.last_at, at)
    run.last_day = run.last_at.date()
    run.save()
    return run


def _let_go_of_older(suite: Suite, branch: str) -> None:
    """Before a new run joins: the keys of all but the branch's newest MEMBERS_KEPT - 1."""
    kept = CiRun.objects.filter(suite=suite, branch=branch, members__isnull=False)
    older = list(kept.order_by("-first_at", "-pk").values_list("pk", flat=True)[MEMBERS_KEPT - 1:])
    if older:
        CiRun.objects.filter(pk__in=older).update(members=None)
