"""Why each flaky or suspect node is flaky (SPEC 2.4d, docs/diagnosis.md): the board's facts
of its nodes gathered in a constant number of queries, and judged by the one rule,
``rules.diagnose``. The node page, the flaky-tests page, the trends and the answers to a
report upload and to the node endpoint all read the diagnosis from here.

Of each node, the facts are:

- its latest measurement (``runs``): its classification, the cause of an order-dependent
  one as the pages word it, and the client's experiments (seed replay, CPU load);
- what CI's JUnit files show of it (``junit``), from the results and rollups detection
  counts, which leave out every file that was an infrastructure failure
  (``rules.infrastructure``):
  - per job, its runs and flaky failures (failures in a job of a commit that also passed
    it, ``junit.rules.is_flaky``) over the flaky-tests page's default window;
  - at the commits it was measured at, CI's runs and failures there against the runs and
    fails measured there (the JUnit rows kept, ``JUNIT_RETENTION_DAYS``);
  - its failures by signature over the window (``flakeboard.rules.signatures``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import date

from django.db.models import F, OuterRef, Q, Sum, Value, Window
from django.db.models.functions import RowNumber

from flakeboard import rules
from junit.models import SignatureDay
from junit.selectors import Window as DayWindow
from junit.selectors import counted_node_results
from ledger.models import Node, Suite
from runs.models import Measurement

from .flaky import FlakyRanking

# The kinds of rows of the one query of CI's JUnit facts (``_ci_facts``).
JOBS, SIGNATURES, COMMITS = "job", "signature", "commit"
# The same predicate as ``rules.needs_diagnosis``, for the database.
NEEDS_DIAGNOSIS = (Q(classification__in=rules.DIAGNOSED_CLASSIFICATIONS)
                   | Q(classification="", fails__gt=0))


def node_diagnoses(suite: Suite, node_ids: Iterable[str] | None = None, *, today: date,
                   ) -> dict[str, rules.Diagnosis]:
    """The diagnosis of each of ``node_ids`` (node ids, as ``tests/x.py::test_y``) the
    suite knows, by node id; with None, of every node the board finds flaky or suspect:
    listed on the flaky-tests page over its default window, or whose latest measurement
    in that window ``rules.needs_diagnosis``. Four queries at most, whatever the count."""
    window = DayWindow(today)
    nodes = Node.objects.filter(suite=suite)
    nodes = nodes.filter(_flaky_or_suspect(suite, window)) if node_ids is None else (
        nodes.named(*node_ids))
    names = dict(nodes.values_list("pk", "nodeid"))
    if not names:
        return {}
    found = _diagnosed(suite, list(names), window, _latest_measurements(list(names)))
    return {names[pk]: found[pk] for pk in sorted(names, key=names.get)}


def node_diagnosis(suite: Suite, node_id: str, *, today: date) -> rules.Diagnosis | None:
    """The diagnosis of one node (its id); None when the suite does not know it."""
    return node_diagnoses(suite, [node_id], today=today).get(node_id)


def diagnoses_by_node(suite: Suite, pks: list[int], *, today: date,
                      ) -> dict[int, rules.Diagnosis]:
    """The diagnosis of each of the suite's nodes ``pks`` (primary keys), from its latest
    measurement: what a failed node's line names (``board.failures``). Three queries at most."""
    return _diagnosed(suite, pks, DayWindow(today), _latest_measurements(pks)) if pks else {}


def latest_diagnosis(suite: Suite, node: Node, latest: Measurement | None, *,
                     today: date) -> rules.Diagnosis:
    """The diagnosis of one of the suite's nodes, given its latest measurement (None when
    it has none) as its page has read it already: two queries at most."""
    measured = {} if latest is None else {node.pk: latest.diagnosis_facts()}
    return _diagnosed(suite, [node.pk], DayWindow(today), measured)[node.pk]


def measured_diagnoses(suite: Suite, measured: dict[int, rules.MeasuredFacts], *,
                       today: date) -> dict[int, rules.Diagnosis]:
    """The diagnosis of each of the suite's nodes (by primary key) from the measurement
    given for it, not the one stored last: a report's answer diagnoses each row from the
    row itself, in a dry run too. Two queries, whatever the count."""
    return _diagnosed(suite, list(measured), DayWindow(today), measured) if measured else {}


def _diagnosed(suite: Suite, pks: list[int], window: DayWindow,
               measured: dict[int, rules.MeasuredFacts]) -> dict[int, rules.Diagnosis]:
    # Only a node with a measurement has commits it was measured at.
    ci = _ci_facts(suite, pks, window, _measured_at([pk for pk in pks if pk in measured]))
    return {pk: rules.diagnose(measured.get(pk), ci.get(pk)) for pk in pks}


def _flaky_or_suspect(suite: Suite, window: DayWindow) -> Q:
    """The nodes the flaky-tests page lists over the window, and those whose latest
    measurement in it needs a diagnosis."""
    listed = Q()
    for part in FlakyRanking(suite, window).parts:
        listed |= Q(pk__in=part.values("node_id"))
    latest = Measurement.objects.filter(node=OuterRef("node_id")).order_by("-created_at", "-pk")
    suspect = Measurement.objects.filter(window.q("report__day"), NEEDS_DIAGNOSIS,
                                         suite=suite, pk=latest.values("pk")[:1])
    return listed | Q(pk__in=suspect.values("node_id"))


def _latest_measurements(pks: list[int]) -> dict[int, rules.MeasuredFacts]:
    """Each node's latest measurement, as the rule reads it."""
    newest = F("created_at").desc(), F("pk").desc()
    latest = (Measurement.objects.filter(node_id__in=pks)
              .annotate(nth=Window(RowNumber(), partition_by=[F("node_id")], order_by=newest))
              .filter(nth=1).only("node_id", "classification", "cause", "experiments"))
    return {m.node_id: m.diagnosis_facts() for m in latest}


def _measured_at(pks: list[int]) -> dict[int, dict[str, tuple[int, int]]]:
    """Each node's measured runs and fails per commit (reports that name one)."""
    measured: dict[int, dict[str, tuple[int, int]]] = defaultdict(dict)
    if not pks:
        return measured
    for node, commit, n, fails in (
            Measurement.objects.filter(node_id__in=pks).exclude(report__commit="")
            .values_list("node_id", "report__commit").annotate(Sum("n"), Sum("fails"))
            .order_by()):
        measured[node][commit] = (n, fails)
    return measured


def _ci_facts(suite: Suite, pks: list[int], window: DayWindow,
              measured_at: dict[int, dict[str, tuple[int, int]]]) -> dict[int, rules.CiFacts]:
    """Each node's facts from CI's JUnit files: per job over the window, against its
    measurements at the commits both ran it at, and its failures by signature."""
    # One query: the union of each node's figures per job over the window, at each commit
    # it was measured at, and per failure signature over the window.
    # The nodes are the suite's, so their counts are too.
    results = counted_node_results(suite.pk, node_id__in=pks)
    runs = Sum(F("passes") + F("failures"))
    parts = [results.filter(window.q()).values("node_id", "file__job").annotate(
        kind=Value(JOBS), key=F("file__job"), runs=runs, counted=Sum("flaky_failures")),
        window.rows(SignatureDay, suite=suite, node_id__in=pks).order_by()
        .values("node_id", "signature").annotate(
            kind=Value(SIGNATURES), key=F("signature"), runs=Sum("failures"),
            counted=Value(0))]
    commits = {commit for at in measured_at.values() for commit in at}
    if commits:
        parts.append(results.filter(node_id__in=list(measured_at), file__commit__in=commits)
                     .values("node_id", "file__commit").annotate(
                         kind=Value(COMMITS), key=F("file__commit"), runs=runs,
                         counted=Sum("failures")))
    shape = ("kind", "node_id", "key", "runs", "counted")
    first, *rest = [part.values_list(*shape) for part in parts]
    jobs = defaultdict(dict)  # node → job → (runs, flaky failures), over the window
    ci_at = defaultdict(dict)  # node → commit → (runs, failures), at its measured commits
    signatures = defaultdict(list)  # node → [(signature, failures)], over the window
    for kind, node, key, total, counted in first.union(*rest, all=True).order_by():
        if kind == JOBS:
            jobs[node][key] = (total, counted)
        elif kind == SIGNATURES:
            signatures[node].append((key, total))
        elif key in measured_at[node]:
            ci_at[node][key] = (total, counted)
    for found in signatures.values():
        found.sort()
    facts = {}
    for pk in pks:
        commits = ci_at.get(pk, {})
        both = [measured_at[pk][commit] for commit in commits]
        rates = rules.RatePair(
            ci_runs=sum(runs for runs, _ in commits.values()),
            ci_failures=sum(fails for _, fails in commits.values()),
            measured_runs=sum(n for n, _ in both), measured_fails=sum(f for _, f in both),
        ) if commits else None
        facts[pk] = rules.CiFacts(
            jobs=tuple(rules.JobFigures(job, runs, flaky) for job, (runs, flaky)
                       in sorted(jobs.get(pk, {}).items())),
            rates=rates, signatures=tuple(signatures.get(pk, ())))
    return facts
