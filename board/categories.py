"""How the pages show a diagnosis (SPEC 2.4d, ``board.diagnosis``): each category's name and
what it means for the test's owner, the node page's panel, and the flaky-tests page's column
and its filter by category."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from django.db.models import Q

from flakeboard import rules
from junit.selectors import Window
from ledger.models import Node, Suite

from .diagnosis import node_diagnoses, node_diagnosis
from .flaky import FlakyRanking

Category = rules.Category


@dataclass(frozen=True)
class CategoryWords:
    label: str  # a short name, for a column or a select
    meaning: str  # what it means and what to do, one sentence


WORDS = {
    Category.ORDER_DEPENDENT: CategoryWords(
        "Order-dependent", "It fails after (or without) another test: make it set up and "
                           "clean up the state it relies on."),
    Category.SEEDED: CategoryWords(
        "Random input", "It fails on its random input: replay the seed and fix the test's "
                        "assumption."),
    Category.TIMING: CategoryWords(
        "Timing", "It fails more often under CPU load: it waits on time, not on a condition; "
                  "wait for the condition instead."),
    Category.REPEAT_UNSAFE: CategoryWords(
        "Leaks into its next run", "Its own earlier run changes its outcome: it leaves state "
                                    "behind; reset that state in the test."),
    Category.JOB_SPECIFIC: CategoryWords(
        "One CI job", "Its flaky failures concentrate in one job of CI's matrix: compare that "
                      "job's versions and environment with the others'."),
    Category.CI_ONLY: CategoryWords(
        "CI only", "It flakes in CI but not when measured: look at CI's conditions (load, "
                   "parallel workers, the network) and reproduce them."),
    Category.EXTERNAL: CategoryWords(
        "Network or service", "Its failures name the network or a service: give the test a "
                              "fake of that service."),
    Category.UNKNOWN: CategoryWords(
        "Unknown", "No experiment or statistic explains it yet: see what was tried, and "
                   "measure it with the diagnosis on."),
}


def words(category: str) -> CategoryWords:
    return WORDS[Category(category)]


@dataclass(frozen=True)
class Shown:
    """A diagnosis as a page shows it: the rule's answer and its category's words."""

    diagnosis: rules.Diagnosis

    @property
    def category(self) -> str:
        return self.diagnosis.category.value

    @property
    def words(self) -> CategoryWords:
        return WORDS[self.diagnosis.category]


def node_panel(suite: Suite, node: Node, *, today: date, measured: bool) -> Shown | None:
    """The node page's diagnosis, or None when the node is neither flaky (on the flaky-tests
    page over its default window) nor suspect (``measured``: its latest measurement
    ``rules.needs_diagnosis``)."""
    flaky = measured or FlakyRanking(suite, Window(today),
                                     nodes=Node.objects.filter(pk=node.pk)).count() > 0
    if not flaky:
        return None
    diagnosis = node_diagnosis(suite, node.nodeid, today=today)
    return None if diagnosis is None else Shown(diagnosis)


@dataclass(frozen=True)
class CategoryCounts:
    """The flaky-tests page's listing diagnosed whole, for its filter by category: the
    diagnosis of each listed node, by its primary key."""

    shown: dict[int, Shown]

    @property
    def counts(self) -> list[tuple[str, str, int]]:
        """(category, label, count) of every category, in the rule's order."""
        counted = Counter(shown.category for shown in self.shown.values())
        return [(category.value, WORDS[category].label, counted[category.value])
                for category in Category]

    def nodes(self, category: str):
        """The listed nodes of ``category``, as a queryset."""
        return Node.objects.filter(pk__in=[pk for pk, shown in self.shown.items()
                                           if shown.category == category])


def category_counts(suite: Suite, ranking: FlakyRanking, *, today: date) -> CategoryCounts:
    """Every node ``ranking`` lists, diagnosed: six queries, whatever the count, though
    the time grows with the listed tests' JUnit history."""
    listed = Q(pk__in=[])
    for part in ranking.parts:
        listed |= Q(pk__in=part.values("node_id"))
    return CategoryCounts(diagnosed(
        suite, Node.objects.filter(listed, suite=suite).only("pk", "nodeid"), today=today))


def diagnosed(suite: Suite, nodes: Iterable[Node], *, today: date) -> dict[int, Shown]:
    """The diagnosis of each of ``nodes`` (the suite's), by its primary key: five queries
    (one more to read a queryset of them), whatever the count."""
    pks = {node.nodeid: node.pk for node in nodes}
    found = node_diagnoses(suite, pks, today=today) if pks else {}
    return {pks[nodeid]: Shown(diagnosis) for nodeid, diagnosis in found.items()}
