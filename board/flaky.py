"""The flaky evidence of both kinds, in the one order the flaky-tests page lists it and the
targets file takes it: first the nodes that flipped between gate attempts in the window
(``board.flips``), then the other tests flaky in JUnit files (``junit.selectors``).

Flips come first because each blocked a gate: its answer told the patch's author to
measure the node, and a retry will not change that verdict. Ranked among the JUnit tests
by count, a single flip would sit below tests with many flaky failures, past the targets
file's limit, and the advice would never be followed.
"""

from __future__ import annotations

from functools import cached_property

from django.db.models import Count, Subquery
from django.db.models.functions import Coalesce

from junit.selectors import FlakyRow, Window, flaky_days, flaky_ranking, flaky_rows
from ledger.models import Suite

from .flips import flip_ranking, flipped_rows, gate_flip

FLIPPED = "Flipped between gate attempts"
JUNIT_FLAKY = "Flaky in JUnit files"


def flaky_sources(suite: Suite, window: Window) -> tuple:
    """The two rankings, in the order they are listed: values rows with ``node_id``,
    ``first_flaky`` and ``last_flaky``; a flip's also have its latest batch."""
    return flip_ranking(suite, window), flaky_ranking(suite, window)


def _distinct_nodes(rows):
    """How many nodes ``rows`` hold, as a subquery (0 for none)."""
    return Coalesce(Subquery(rows.order_by().values("suite").annotate(
        nodes=Count("node_id", distinct=True)).values("nodes")), 0)


class FlakyRanking:
    """The page's list: the flipped nodes, then the JUnit ranking without them. A sequence
    the paginator counts (both parts in one query) and slices, reading only the parts a
    page falls in."""

    def __init__(self, suite: Suite, window: Window, nodes=None):
        flipped, days = flipped_rows(suite, window), flaky_days(suite, window)
        if nodes is not None:
            flipped, days = flipped.filter(node__in=nodes), days.filter(node__in=nodes)
        self.suite = suite
        self.flipped_rows = flipped
        self.junit_days = days.exclude(node_id__in=flipped.values("node_id"))
        self.flips = flip_ranking(suite, window, flipped)
        self.junit = flaky_ranking(suite, window, self.junit_days)

    @cached_property
    def counts(self) -> tuple[int, int]:
        """How many nodes flipped, and how many others are flaky in JUnit files."""
        return Suite.objects.filter(pk=self.suite.pk).values_list(
            _distinct_nodes(self.flipped_rows), _distinct_nodes(self.junit_days)).get()

    @property
    def flipped(self) -> int:
        return self.counts[0]

    def count(self) -> int:
        return sum(self.counts)

    def __getitem__(self, part: slice) -> list[dict]:
        start, stop = part.start or 0, part.stop
        rows = list(self.flips[start:stop]) if start < self.flipped else []
        if stop is None or stop > self.flipped:
            rows += self.junit[max(start - self.flipped, 0):
                               None if stop is None else stop - self.flipped]
        return rows


def flaky_page_rows(suite: Suite, window: Window, ranked: list[dict], *,
                    headings: bool = True) -> list[FlakyRow]:
    """The rows of ``ranked`` (a page of a ``FlakyRanking``), each flipped one with its
    latest flip; with ``headings``, each row that begins a group on the page says so."""
    rows = flaky_rows(suite, window, [row["node_id"] for row in ranked])
    previous = None
    for row, ranked_row in zip(rows, ranked, strict=True):
        row.flip = gate_flip(suite, ranked_row) if "last_batch" in ranked_row else None
        group = FLIPPED if row.flip else JUNIT_FLAKY
        if headings and group != previous:
            row.heading = group
        previous = group
    return rows
