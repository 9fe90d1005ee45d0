"""The flaky evidence of three kinds, in the one order the flaky-tests page lists it and the
targets file takes it: first the nodes that flipped between gate attempts in the window
(``board.flips``), then the new tests flaky at birth (``board.births``), then the other
tests flaky in JUnit files (``junit.selectors``).

Flips and births come first because each failed a gate: its answer told the patch's author
to measure the node, and a retry will not change that verdict. Ranked among the JUnit tests
by count, a single flip would sit below tests with many flaky failures, past the targets
file's limit, and the advice would never be followed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from functools import cached_property

from django.db.models import Count, Subquery
from django.db.models.functions import Coalesce

from junit.rules import FlakyFigures
from junit.selectors import FlakyRow, Window, flaky_nodes, flaky_ranking, flaky_rows
from ledger.models import Suite

from .births import birth_ranking, birth_rows, births
from .flips import flip_ranking, flipped_rows, gate_flip

FLIPPED = "Flipped between gate attempts"
BORN_FLAKY = "Flaky at birth"
JUNIT_FLAKY = "Flaky in JUnit files"
# The overview's tile counts the flaky tests of this window, one the page offers.
FLAKY_TILE_DAYS = 7
# The evidence filter's choices: each kind of flaky evidence, by its heading.
EVIDENCE = {"flipped": FLIPPED, "birth": BORN_FLAKY, "junit": JUNIT_FLAKY}


def flaky_sources(suite: Suite, window: Window) -> tuple:
    """The three rankings, in the order they are listed: values rows with ``node_id``,
    ``first_flaky`` and ``last_flaky``; a flip's also have its latest batch, a birth's its
    latest measurement."""
    return flip_ranking(suite, window), birth_ranking(suite, window), flaky_ranking(suite, window)


def _distinct_nodes(rows):
    """How many nodes ``rows`` hold, as a subquery (0 for none)."""
    return Coalesce(Subquery(rows.order_by().values("suite").annotate(
        nodes=Count("node_id", distinct=True)).values("nodes")), 0)


class FlakyRanking:
    """The page's list: the flipped nodes, then those flaky at birth without them, then the
    JUnit ranking without either; with ``evidence`` (a key of EVIDENCE), that kind alone. A
    sequence the paginator counts (every part in one query) and slices, reading only the
    parts a page falls in."""

    def __init__(self, suite: Suite, window: Window, nodes=None, evidence: str = ""):
        parts = {"flipped": flipped_rows(suite, window), "birth": birth_rows(suite, window),
                 "junit": flaky_nodes(suite, window)}
        for kind, rows in parts.items():
            if nodes is not None:
                rows = rows.filter(node__in=nodes)
            parts[kind] = rows if evidence in ("", kind) else rows.none()
        flipped = parts["flipped"]
        born = parts["birth"].exclude(node_id__in=flipped.values("node_id"))
        days = parts["junit"].exclude(node_id__in=flipped.values("node_id")).exclude(
            node_id__in=born.values("node_id"))
        self.suite = suite
        self.parts = (flipped, born, days)
        self.rankings = (flip_ranking(suite, window, flipped),
                         birth_ranking(suite, window, born),
                         flaky_ranking(suite, window, days))

    @cached_property
    def counts(self) -> tuple[int, int, int]:
        """How many nodes flipped, how many others were flaky at birth, and how many
        others are flaky in JUnit files."""
        return Suite.objects.filter(pk=self.suite.pk).values_list(
            *map(_distinct_nodes, self.parts)).get()

    @property
    def flipped(self) -> int:
        return self.counts[0]

    @property
    def born(self) -> int:
        return self.counts[1]

    def count(self) -> int:
        return sum(self.counts)

    def __getitem__(self, part: slice) -> list[dict]:
        start, stop = part.start or 0, part.stop
        rows, offset = [], 0
        for ranking, size in zip(self.rankings, self.counts, strict=True):
            if size and (stop is None or stop > offset) and start < offset + size:
                rows += ranking[max(start - offset, 0):
                                None if stop is None else stop - offset]
            offset += size
        return rows


def flaky_count(suite: Suite, window: Window) -> int:
    """How many tests were flaky in the window, each once whatever its evidence: flipped
    between gate attempts, flaky at birth, or flaky in JUnit files. The one count of flaky
    tests: the flaky-tests page's headline says it, the overview's tile too."""
    return FlakyRanking(suite, window).count()


@dataclass(frozen=True)
class RowEvidence:
    """The evidence a row of the page lists it for, in its figures' columns: a flip's
    attempts at its latest commit (failures: the attempts that failed it), a birth's runs
    of the new-test guard, or a test's runs in JUnit files; the commits it was flaky at and
    the days it was seen flaky. ``failed`` and ``runs`` say what its two counts are."""

    figures: FlakyFigures
    first: date | None
    last: date | None
    failed: str = "Flaky failures"
    runs: str = "Runs"


def row_evidence(row: FlakyRow, ranked: dict) -> RowEvidence:
    """A row's own evidence: its flip's, its birth's, or else its JUnit figures."""
    days = ranked["first_flaky"], ranked["last_flaky"]
    if flip := row.flip:
        failed = len(flip.attempts.failed_in)
        return RowEvidence(FlakyFigures(flip.attempts.runs, failed, failed, flip.commits),
                           *days, failed="Failed attempts", runs="Attempts")
    if birth := row.birth:
        return RowEvidence(FlakyFigures(birth.n, birth.fails, birth.fails,
                                        ranked["born_commits"]),
                           *days, failed="Failed runs", runs="Runs at birth")
    return RowEvidence(row.figures, row.first_flaky, row.last_flaky)


def flaky_page_rows(suite: Suite, window: Window, ranked: list[dict], *,
                    headings: bool = True) -> list[FlakyRow]:
    """The rows of ``ranked`` (a page of a ``FlakyRanking``), each flipped one with its
    latest flip, each flaky at birth with its latest birth, each with its own evidence;
    with ``headings``, each row that begins a group on the page says so."""
    rows = flaky_rows(suite, window, [row["node_id"] for row in ranked])
    born = births(suite, ranked)
    previous = None
    for row, ranked_row in zip(rows, ranked, strict=True):
        row.flip = gate_flip(suite, ranked_row) if "last_batch" in ranked_row else None
        row.birth = born.get(row.node.pk) if "last_measurement" in ranked_row else None
        row.evidence = row_evidence(row, ranked_row)
        group = FLIPPED if row.flip else BORN_FLAKY if row.birth else JUNIT_FLAKY
        if headings and group != previous:
            row.heading = group
        previous = group
    return rows
