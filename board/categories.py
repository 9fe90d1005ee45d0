"""How the pages show a diagnosis (SPEC 2.4d, ``board.diagnosis``): the node page's panel,
and the flaky-tests page's column and its filter by category, each category in its words
(``rules.CATEGORY_WORDS``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from django.db.models import Q

from flakeboard import rules
from junit.selectors import Window
from ledger.models import Node, Suite
from runs.diagnosed import RowDiagnosis as Shown
from runs.models import Measurement

from .diagnosis import diagnoses_by_node, latest_diagnosis
from .flaky import FlakyRanking

Category = rules.Category
CategoryWords, CATEGORY_WORDS = rules.CategoryWords, rules.CATEGORY_WORDS


def words(category: str) -> CategoryWords:
    return CATEGORY_WORDS[Category(category)]


def node_panel(suite: Suite, node: Node, *, today: date, latest: Measurement | None,
               junit_flaky: bool) -> Shown | None:
    """The node page's diagnosis, or None when the node is neither flaky (on the flaky-tests
    page over its default window) nor suspect (its ``latest`` measurement
    ``rules.needs_diagnosis``). ``junit_flaky``: the page's passive history, over that
    window on every branch, has flaky failures, which lists the node on the flaky-tests
    page without counting it again."""
    measured = latest is not None and rules.needs_diagnosis(latest.classification or None,
                                                            latest.fails)
    flaky = measured or junit_flaky or FlakyRanking(
        suite, Window(today), nodes=Node.objects.filter(pk=node.pk)).count() > 0
    if not flaky:
        return None
    return Shown(latest_diagnosis(suite, node, latest, today=today))


@dataclass(frozen=True)
class CategoryCounts:
    """The flaky-tests page's listing diagnosed whole, for its filter by category: the
    diagnosis of each listed node, by its primary key."""

    shown: dict[int, Shown]

    @property
    def counts(self) -> list[tuple[str, str, int]]:
        """(category, label, count) of every category, in the rule's order."""
        counted = Counter(shown.category for shown in self.shown.values())
        return [(category.value, CATEGORY_WORDS[category].label, counted[category.value])
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
    """The diagnosis of each of ``nodes`` (the suite's), by its primary key: four queries at
    most (one more to read a queryset of them), whatever the count."""
    pks = [node.pk for node in nodes]
    return {pk: Shown(diagnosis)
            for pk, diagnosis in diagnoses_by_node(suite, pks, today=today).items()}
