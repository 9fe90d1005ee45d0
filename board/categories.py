"""How the pages show a diagnosis (SPEC 2.4d, ``board.diagnosis``): each category's name and
what it means for the test's owner, the node page's panel, and the flaky-tests page's column
and its filter by category."""

from __future__ import annotations

from collections import Counter
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
class CategoryFilter:
    """The flaky-tests page's category filter over one listing: the diagnosis of each
    listed node (by its primary key), how many are in each category, and the nodes of the
    category chosen ("" for all)."""

    shown: dict[int, Shown]
    chosen: str

    @property
    def counts(self) -> list[tuple[str, str, int]]:
        """(category, label, count) of every category, in the rule's order."""
        counted = Counter(shown.category for shown in self.shown.values())
        return [(category.value, WORDS[category].label, counted[category.value])
                for category in Category]

    @property
    def nodes(self):
        """The listed nodes of the chosen category, as a queryset; None for all."""
        if not self.chosen:
            return None
        return Node.objects.filter(pk__in=[pk for pk, shown in self.shown.items()
                                           if shown.category == self.chosen])


def category_filter(suite: Suite, ranking: FlakyRanking, chosen: str, *,
                    today: date) -> CategoryFilter:
    """Every node ``ranking`` lists, diagnosed."""
    listed = Q(pk__in=[])
    for part in ranking.parts:
        listed |= Q(pk__in=part.values("node_id"))
    return CategoryFilter(diagnosed(suite, Node.objects.filter(listed), today=today), chosen)


def diagnosed(suite: Suite, nodes, *, today: date) -> dict[int, Shown]:
    """The diagnosis of each of ``nodes`` (a queryset), by its primary key; six queries,
    whatever the count."""
    names = dict(nodes.filter(suite=suite).values_list("nodeid", "pk"))
    found = node_diagnoses(suite, names, today=today) if names else {}
    return {names[nodeid]: Shown(diagnosis) for nodeid, diagnosis in found.items()}
