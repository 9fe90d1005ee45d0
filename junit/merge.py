"""A node that JUnit could only guess, merged into the node it was a guess of.

A pytest testcase under a folder with a dot in its name (``tests/api.v2/test_users.py``)
is written with a classname that cannot say where the dot was (``tests.api.v2.test_users``):
with no ``file`` attribute, its node id is a guess (``tests/api/v2/test_users.py::...``),
and the guess is a node of its own. Once a gate upload names the true node, the next JUnit
file maps the testcase to it (``junit.nodes``), and the guess is merged into it here: its
results, its rollups (counts added where the true node has a row for the same key; its
summary rebuilt) and its mark to measure move over, and the guess is deleted, so the
flaky-tests page and the targets file name the true id alone. A commit flaky under both
names counts once among the day's flaky commits (the day its jobs were last seen).

Only a guess no upload vouched for is merged: no gate upload named it and it has no entry,
so it holds no measurement, verdict or entry of its own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

from django.db.models import Max, Model, Q, Sum

from ledger.models import MeasureTarget, Node

from .models import NodeDay, SignatureDay, node_results
from .rules import is_flaky
from .selectors import counted_node_results
from .summary import summary_node_merged


def _merge_rows(model: type[Model], key: Iterable[str], counts: Iterable[str], guess: int,
                into: int, finish: Callable[[Model, Model], None] | None = None) -> None:
    """Move the guess's rows of ``model`` to ``into``; where ``into`` has a row with the
    same ``key``, add the guess's ``counts`` to it (then ``finish`` it) instead."""
    key, counts = tuple(key), tuple(counts)
    taken = {tuple(getattr(row, f) for f in key): row
             for row in model.objects.filter(node_id=into)}
    moved = []
    for row in model.objects.filter(node_id=guess):
        kept = taken.get(tuple(getattr(row, f) for f in key))
        if kept is None:
            moved.append(row.pk)
            continue
        for field in counts:
            setattr(kept, field, getattr(kept, field) + getattr(row, field))
        if finish is not None:
            finish(kept, row)
        kept.save()
        row.delete()
    model.objects.filter(pk__in=moved).update(node_id=into)


def _flaky_commits(suite_id: int, node: int) -> set[tuple]:
    """The (day, commit) pairs of the jobs a node was flaky in, each by the last day a
    counted file of the job held it."""
    jobs = (counted_node_results(suite_id, node_id=node).values("file__commit", "file__job")
            .annotate(passes=Sum("passes"), failures=Sum("failures"), last=Max("day")))
    return {(job["last"], job["file__commit"]) for job in jobs
            if is_flaky(job["passes"], job["failures"])}


def merge_guess(suite_id: int, guess: int, into: int) -> None:
    """Merge the guessed node ``guess`` into the node ``into`` (primary keys, of the suite
    ``suite_id``), and delete it. The caller holds the suite's write lock, in the upload's
    transaction."""
    # A commit flaky under both names on one day is one flaky commit of that day.
    twice = Counter(day for day, _ in (_flaky_commits(suite_id, guess)
                                       & _flaky_commits(suite_id, into)))

    def day_finished(kept: NodeDay, row: NodeDay) -> None:
        kept.flaky_commits = max(0, kept.flaky_commits - twice[kept.day])

    node_results(suite_id, node_id=guess).update(node_id=into)
    _merge_rows(NodeDay, ("suite_id", "day", "branch"),
                ("runs", "failures", "flaky_failures", "flaky_commits"), guess, into,
                day_finished)
    _merge_rows(SignatureDay, ("suite_id", "day", "branch", "signature"), ("failures",),
                guess, into)
    if not MeasureTarget.objects.filter(node_id=into).exists():
        MeasureTarget.objects.filter(node_id=guess).update(node_id=into)
    # The guess's evidence is the true node's now, and may be its first: a guess is made
    # with its first evidence, so when it is the older node, its first came before any of
    # the true node's.
    first = Node.objects.filter(pk=guess).values_list("first_commit", flat=True).first()
    if first is not None:
        earlier = Q(first_commit__isnull=True) | Q(pk__gt=guess)
        Node.objects.filter(earlier, pk=into).update(first_commit=first)
    Node.objects.filter(pk=guess).delete()
    summary_node_merged(into)
