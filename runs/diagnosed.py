"""Each measurement row's diagnosis in a report's answer (SPEC 2.4d): why its test is
flaky, for a row classified flaky, order_dependent or repeat_unsafe, or unclassified with a
failed run (``rules.needs_diagnosis``); null for every other row.

A diagnosis reads CI's JUnit facts too, which only the board composes: its app gives the
function here when Django starts (``board.apps``), so that ``runs`` imports nothing of the
board. Called with the suite, each row's node (primary key) and the measurement it
diagnoses (the row itself, stored or not: a dry run's row is diagnosed as its upload's
would be), and the day; answers a ``rules.Diagnosis`` by node."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

from flakeboard import rules
from ledger.models import Suite

# The rows of one answer diagnosed at most: a report with more flaky rows is broken whole,
# and its first are diagnosed (its other rows answer null).
DIAGNOSED_MAX = 1000
MeasuredDiagnoses = Callable[..., dict[int, rules.Diagnosis]]
_measured_diagnoses: list[MeasuredDiagnoses] = []


def rows_diagnosed_by(diagnose: MeasuredDiagnoses) -> None:
    _measured_diagnoses[:] = [diagnose]


def rows_diagnosed(suite: Suite, rows: list[dict], measured: dict[int, object],
                   nodes: list[int], today: date) -> list[dict]:
    """Set each row's ``diagnosis``: ``nodes`` gives each row's node, ``measured`` the
    measurement (a ``runs.models.Measurement``, saved or not) of each node that needs one."""
    wanted = {pk: m.diagnosis_facts() for pk, m in list(measured.items())[:DIAGNOSED_MAX]}
    found = (_measured_diagnoses[0](suite, wanted, today=today)
             if wanted and _measured_diagnoses else {})
    for row, pk in zip(rows, nodes, strict=True):
        diagnosis = found.get(pk)
        row["diagnosis"] = None if diagnosis is None else diagnosis.answer()
    return rows


@dataclass(frozen=True)
class RowDiagnosis:
    """A diagnosis as a page shows it (a report's rows, the node page, the flaky-tests
    page): the rule's answer and its category's words."""

    diagnosis: rules.Diagnosis

    @property
    def category(self) -> str:
        return self.diagnosis.category.value

    @property
    def words(self) -> rules.CategoryWords:
        return rules.CATEGORY_WORDS[self.diagnosis.category]


def measurements_diagnosed(suite: Suite, measurements: list, today: date
                           ) -> dict[int, RowDiagnosis]:
    """The diagnosis of each stored measurement (by primary key) that needs one, made from
    it, as its report's answer made it, with what CI's JUnit files show today."""
    needing = {m.node_id: m for m in measurements[:DIAGNOSED_MAX]
               if rules.needs_diagnosis(m.classification or None, m.fails)}
    if not needing or not _measured_diagnoses:
        return {}
    found = _measured_diagnoses[0](suite, {pk: m.diagnosis_facts() for pk, m in needing.items()},
                                   today=today)
    return {m.pk: RowDiagnosis(found[pk]) for pk, m in needing.items() if pk in found}
