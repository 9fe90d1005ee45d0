"""Flips between gate attempts, read as flaky evidence (SPEC 2.4a).

A node flipped at a patch and commit when it failed in one attempt of the gate there and
passed in another, neither an infrastructure failure (``rules.NodeAttempts.flipped``,
stored on its batch row at ingest: a broken runner's attempt is never flaky evidence). Every
later attempt at that patch and commit carries the node's row, still flipped, so a node's
latest flipped row holds all its attempts there. A flip is flaky evidence, as a JUnit flip
is: the flaky-tests page lists the node and the targets file offers it to measure.

A batch belongs to a window by its day; batches carry no branch, so a window on one branch
holds no flip. Read through the partial index on flipped rows: the cost follows the flips,
never the batches kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from django.db.models import Count, Max, Min, OuterRef, Subquery
from django.urls import reverse

from flakeboard import rules
from junit.selectors import Window
from ledger.models import Suite
from runs.models import NodeVerdict


def flipped_rows(suite: Suite, window: Window):
    """The suite's flipped batch rows whose batch's day is in the window."""
    if window.branch:
        return NodeVerdict.objects.none()
    rows = NodeVerdict.objects.filter(window.q("batch__day"), suite=suite, flipped=True)
    if window.text:
        rows = rows.filter(node__nodeid__icontains=window.text)
    return rows


def flip_ranking(suite: Suite, window: Window, rows=None):
    """The nodes that flipped between gate attempts in the window (or in ``rows``, some of
    its ``flipped_rows``), those that flipped at the most commits first, then the latest:
    values rows of ``node_id``, ``flipped_commits``, ``first_flaky`` and ``last_flaky``
    (days, as the JUnit ranking has them), and the latest flip's ``last_batch``,
    ``last_commit`` and ``last_attempts`` (its attempts there, as the answer gives them)."""
    rows = flipped_rows(suite, window) if rows is None else rows
    latest = rows.filter(node_id=OuterRef("node_id")).order_by("-batch_id")
    return (
        rows.values("node_id")
        .annotate(flipped_commits=Count("batch__commit", distinct=True),
                  first_flaky=Min("batch__day"), last_flaky=Max("batch__day"),
                  last_batch=Max("batch_id"),
                  last_commit=OfTheGroup(latest.values("batch__commit")[:1]),
                  last_attempts=OfTheGroup(latest.values("attempts")[:1]))
        .order_by("-flipped_commits", "-last_batch", "node_id")
    )


class OfTheGroup(Subquery):
    """A subquery on a group's own key (its node): read once per group listed. Django
    would otherwise group by it too, and so run it once per row grouped."""

    def get_group_by_cols(self):
        return []


@dataclass(frozen=True)
class GateFlip:
    """A node's latest flip in a window: the commit it flipped at, the batch (the latest
    attempt there, which holds every attempt before it) and its day, the attempts that
    failed and passed the node, and how many commits it flipped at in the window."""

    commit: str
    batch: int
    url: str
    day: date
    attempts: rules.NodeAttempts
    commits: int

    @property
    def other_commits(self) -> int:
        return self.commits - 1

    @property
    def failed(self) -> str:
        """The attempts that failed it, as the page says them: "attempts 1, 3"."""
        return _numbered(self.attempts.failed_in)

    @property
    def passed(self) -> str:
        return _numbered(self.attempts.passed_in)


def _numbered(attempts: tuple[int, ...]) -> str:
    return f"attempt{'s' if len(attempts) > 1 else ''} {', '.join(map(str, attempts))}"


def gate_flip(suite: Suite, row: dict) -> GateFlip:
    """A ``flip_ranking`` row's latest flip."""
    return GateFlip(row["last_commit"], row["last_batch"],
                    reverse("batch", args=[suite.slug, row["last_batch"]]), row["last_flaky"],
                    rules.NodeAttempts.from_answer(row["last_attempts"]),
                    row["flipped_commits"])
