"""The quarantined share of the test set (SPEC 2.2, amended in docs/test-set.md) and its
cap.

The test set is always the board's own figure: the tests of CI's most recent complete run
on the default branch (``ci_run``); where no JUnit says which, the nodes seen in an upload
within the known-node window, or holding an open entry. A report's ``selected_total`` is
the client's word, shown beside it and never the denominator: a number any write token can
state would move the cap both ways.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import date
from enum import StrEnum
from fractions import Fraction

from .text import plural
from .windows import DayWindow

KNOWN_NODE_WINDOW_DAYS = 30
# Seen in an upload within the last 30 days, today included.
KNOWN_NODE_WINDOW = DayWindow(first=-KNOWN_NODE_WINDOW_DAYS)


def node_is_known(last_seen: date | None, today: date, *, has_open_entry: bool) -> bool:
    """In the test set: seen in an upload within the window, or holding an open entry.
    ``last_seen`` is None for a node no upload has named."""
    seen = last_seen is not None and KNOWN_NODE_WINDOW.contains(last_seen, today)
    return seen or has_open_entry


def quarantined_share(quarantined: int, test_set_size: int) -> float:
    if test_set_size <= 0:
        return 0.0 if quarantined <= 0 else 1.0
    return quarantined / test_set_size


def share_over_limit(share: Fraction, limit: float) -> bool:
    """A share over a limit, compared exactly: the limit as written (0.05, not its binary
    neighbour), so 1 of 20 is at 0.05 and 3 of 10 at 0.3, and neither is over. One
    comparison for every limit a share has (the quarantine cap, the JUnit infrastructure
    share), so that no two of them round differently."""
    return share > Fraction(repr(float(limit)))


def share_over_cap(quarantined: int, test_set_size: int, cap: float) -> bool:
    """The quarantined share over the cap, compared exactly (``share_over_limit``)."""
    if test_set_size <= 0:
        share = Fraction(1 if quarantined > 0 else 0)
    else:
        share = Fraction(quarantined, test_set_size)
    return share_over_limit(share, cap)


@dataclass(frozen=True)
class CiRunFacts:
    """A commit's CI run on a branch: its jobs and the distinct tests they ran (which
    run sizes the test set: ``ci_run.sizing_run``)."""

    commit: str
    branch: str
    jobs: frozenset[str]
    tests: int
    day: date  # of its last file
    first_day: date | None = None  # of its first file (None: taken to be ``day``)

    @property
    def job_names(self) -> list[str]:
        """Its jobs in name order; a job CI did not name is the empty name."""
        return sorted(self.jobs)

    def answer(self) -> dict:
        """The run as the API spells it."""
        return {"commit": self.commit, "branch": self.branch, "jobs": self.job_names,
                "tests": self.tests, "day": self.day.isoformat()}


class SizeSource(StrEnum):
    # Stated by the report: only on reports stored while a stated size still decided, kept
    # so that they are explained as they were judged. No figure is sized so now.
    SELECTED_TOTAL = "selected_total"
    CI_RUN = "ci_run"  # CI's last complete run on the default branch (its JUnit)
    KNOWN_NODES = "known_nodes"  # the board's known nodes, with the upload's own


def size_words(size: int, source: SizeSource | str | None, branch: str = "") -> str:
    """The test set's size and what it counts, as every page and message says it: "375
    tests CI ran on main", "12 selected tests", "4 known nodes"."""
    match source:
        case SizeSource.SELECTED_TOTAL:
            return plural(size, "selected test")
        case SizeSource.CI_RUN:
            return f"{plural(size, 'test')} CI ran" + (f" on {branch}" if branch else "")
    return plural(size, "known node")


@dataclass(frozen=True)
class ShareFigures:
    quarantined: int
    size: int
    cap: float
    source: SizeSource = SizeSource.KNOWN_NODES
    run: CiRunFacts | None = None  # the run that sized it (source CI_RUN)

    @property
    def share(self) -> float:
        return quarantined_share(self.quarantined, self.size)

    @property
    def over_cap(self) -> bool:
        return share_over_cap(self.quarantined, self.size, self.cap)

    @property
    def headroom(self) -> int:
        """How many more entries fit under the cap."""
        extra = max(0, math.floor(self.cap * self.size) - self.quarantined)
        while extra > 0 and share_over_cap(self.quarantined + extra, self.size, self.cap):
            extra -= 1
        # A cap of 1 never binds; the test set bounds the count then.
        while extra <= self.size and not share_over_cap(
            self.quarantined + extra + 1, self.size, self.cap
        ):
            extra += 1
        return extra

    @property
    def excess(self) -> int:
        """How many entries must go for the share to be within the cap (0 when it is)."""
        kept = min(self.quarantined, max(0, math.floor(self.cap * self.size)))
        while kept > 0 and share_over_cap(kept, self.size, self.cap):
            kept -= 1
        while kept < self.quarantined and not share_over_cap(kept + 1, self.size, self.cap):
            kept += 1
        return self.quarantined - kept

    def with_one_more(self) -> ShareFigures:
        """The figures once one more entry is counted."""
        return ShareFigures(self.quarantined + 1, self.size, self.cap, self.source, self.run)

    def with_more(self, count: int) -> ShareFigures:
        """The figures once ``count`` more entries are counted (renewals that bring
        expired entries back, many at once)."""
        return replace(self, quarantined=self.quarantined + count)

    @property
    def size_words(self) -> str:
        return size_words(self.size, self.source, self.run.branch if self.run else "")

    def source_answer(self) -> dict:
        """Where the size came from, as the API says it: the source, and the CI run."""
        return {"size_source": self.source.value,
                "ci_run": self.run.answer() if self.run else None}

    def answer(self) -> dict:
        """The figures as the API spells them, in an upload's answer and in the status
        endpoint's (``ShareOut``, ``ShareNowOut``): one spelling, so that the two answers
        cannot drift apart. Each adds what only it says (where the size came from; the
        headroom)."""
        return {
            "quarantined": self.quarantined,
            "test_set_size": self.size,
            "share": round(self.share, 6),
            "cap": self.cap,
            "over_cap": self.over_cap,
        }
