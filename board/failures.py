"""Every failure of a patch's gate explained to its author (SPEC 2.4c): the evidence the
board holds of each failed node, gathered once for the verdicts' answer and the failures
endpoint, and labelled by ``rules.failure_label``. Of each node:

- its live ledger entry (``EntryQuerySet.live``: the entries that freeze their node);
- its flaky evidence as the flaky-tests page holds it over its default window
  (``board.flaky``): a flip between gate attempts, flaky at birth, or flaky failures in
  JUnit files, with its rate, Wilson bound and first flaky day, and its diagnosis's
  category where it has one (``board.diagnosis``; an order-dependent test's with its
  cause);
- its results in JUnit files from the suite's default branch (infrastructure failures
  left out): the commits it failed at, newest first, and whether its last result passed.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date

from django.db.models import F, Window
from django.db.models.functions import RowNumber

from flakeboard import rules
from junit.models import node_results
from junit.rules import FAILURES, Outcome
from junit.selectors import Window as DayWindow
from ledger.models import Node, QuarantineEntry, Suite

from .diagnosis import diagnoses_by_node
from .flaky import FlakyRanking, flaky_page_rows

# Each node's newest results on the default branch that are read: enough for the line's
# last failures (rules.DEFAULT_FAILURES_SHOWN) and the count of more.
DEFAULT_RESULTS_READ = 10
# The failed nodes explained at most: a gate that fails more is broken whole, and the first
# are explained (a batch's other failed rows answer null, as a passing row does).
EXPLAINED_MAX = 1000


def failure_evidence(suite: Suite, nodeids: Iterable[str], today: date,
                     ) -> dict[str, rules.FailureEvidence]:
    """The evidence of each of ``nodeids`` (failed nodes of the suite): a node the board
    does not know has none, and is a new failure with no result on the default branch."""
    nodeids = list(dict.fromkeys(nodeids))[:EXPLAINED_MAX]
    nodes = dict(Node.objects.filter(suite=suite).named(*nodeids).values_list("pk", "nodeid"))
    entries = {entry.node_id: (entry.owner, entry.expires.isoformat())
               for entry in QuarantineEntry.objects.live(today).filter(node_id__in=nodes)}
    flaky = _flaky(suite, list(nodes), today)
    failures, passed = _on_default_branch(suite, list(nodes))
    found = {nodeid: rules.FailureEvidence(
        entry=entries.get(pk), flaky=flaky.get(pk), default_failures=tuple(failures.get(pk, ())),
        passed_on_default=passed.get(pk)) for pk, nodeid in nodes.items()}
    return {nodeid: found.get(nodeid, rules.FailureEvidence()) for nodeid in nodeids}


def evidence_answer(evidence: rules.FailureEvidence) -> dict:
    """The evidence as the API answers it, beside its label and line."""
    owner, expires = evidence.entry or (None, None)
    rate, upper, since, diagnosis = evidence.flaky or (None, None, None, None)
    return {
        "entry": None if evidence.entry is None else {"owner": owner, "expires": expires},
        "flaky": None if evidence.flaky is None else {
            "rate": round(rate, 4), "upper95": round(upper, 4), "since": since,
            "diagnosis": diagnosis},
        "default_failures": list(evidence.default_failures),
        "passed_on_default": evidence.passed_on_default,
    }


def failures_explained(suite: Suite, nodeids: Iterable[str], today: date) -> dict[str, dict]:
    """Each failed node's ``{"label", "line", "evidence"}``, by node id."""
    explained = {}
    for nodeid, evidence in failure_evidence(suite, nodeids, today).items():
        label, line = rules.failure_label(evidence)
        explained[nodeid] = {"label": label, "line": line,
                             "evidence": evidence_answer(evidence)}
    return explained


def _flaky(suite: Suite, pks: list[int], today: date) -> dict[int, tuple]:
    """The flaky-tests page's rows of these nodes: each one's (rate, upper95, since,
    diagnosis). A flip's rate is its failed attempts of its attempts, a birth's its failed
    runs of the guard's runs, a JUnit test's its flaky failures per run."""
    if not pks:
        return {}
    window = DayWindow(today)
    ranked = FlakyRanking(suite, window, nodes=pks)[0:None]
    diagnoses = diagnoses_by_node(suite, [row["node_id"] for row in ranked], today=today)
    flaky = {}
    for ranked_row, row in zip(ranked, flaky_page_rows(suite, window, ranked, headings=False),
                               strict=True):
        if row.flip:
            fails, runs = len(row.flip.attempts.failed_in), row.flip.attempts.runs
        elif row.birth:
            fails, runs = row.birth.fails, row.birth.n
        else:
            fails, runs = row.figures.flaky_failures, row.figures.runs
        rate = fails / runs if runs else 0.0
        flaky[row.node.pk] = (rate, rules.upper95(fails, runs),
                              ranked_row["first_flaky"].isoformat(),
                              diagnoses[row.node.pk].label)
    return flaky


def _on_default_branch(suite: Suite, pks: list[int]) -> tuple[dict, dict]:
    """Each node's commits it failed at on the suite's default branch, newest first, and
    whether its last result there passed; a node without a result there is in neither."""
    if not pks:
        return {}, {}
    newest = F("day").desc(), F("file__created_at").desc(), F("file_id").desc()
    results = (node_results(
        suite.pk, node_id__in=pks, file__branch=suite.default_branch,
        file__infrastructure_reason="", outcome__in=[Outcome.PASSED, *FAILURES])
        .annotate(nth=Window(RowNumber(), partition_by=[F("node_id")], order_by=newest))
        .filter(nth__lte=DEFAULT_RESULTS_READ)
        .order_by("node_id", "nth").values_list("node_id", "outcome", "file__commit"))
    failures: dict[int, list[str]] = {}
    passed: dict[int, bool] = {}
    for pk, outcome, commit in results:
        passed.setdefault(pk, outcome == Outcome.PASSED)
        if outcome in FAILURES and commit[:12] not in failures.setdefault(pk, []):
            failures[pk].append(commit[:12])
    return failures, passed
