"""A patch's history (SPEC 2.4a): each commit of the patch, newest first, its attempts in
order with what each one sent and the verdict it answered, and the nodes that flipped there.

A page of commits is read in a fixed number of queries, however many attempts and records
they hold; a commit with very many attempts shows its first ones and its latest, and very
many flips are cut to the first ones, with their number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from django.db.models import Count, F, Max, Min, Q, Window
from django.db.models.functions import RowNumber
from django.urls import reverse

from flakeboard import rules
from flakeboard.rules.trends import first_flip
from ledger.models import Suite

from .models import NodeVerdict, VerdictBatch

COMMITS_PER_PAGE = 10
ATTEMPTS_SHOWN = 20  # a commit's first attempts; its latest is shown after them
FLIPS_SHOWN = 50  # a commit's flipped nodes listed; its latest batch's page lists them all


def patch_url(suite: Suite, patch: str) -> str | None:
    """The patch's page (None for a batch without a patch, which has none)."""
    return reverse("patch", args=[suite.slug, patch]) if patch else None


def patch_batches(suite: Suite, patch: str):
    return VerdictBatch.objects.filter(suite=suite, patch=patch)


def patch_figures(suite: Suite, patch: str) -> dict:
    """How many batches name the patch, at how many commits, first and last when."""
    return patch_batches(suite, patch).aggregate(
        uploads=Count("pk"), commits=Count("commit", distinct=True),
        first_at=Min("created_at"), last_at=Max("created_at"))


def patch_commits(suite: Suite, patch: str):
    """The patch's commits, newest first (by their first upload), each as a dict of its
    ``commit``, the number of its ``uploads`` and its ``latest`` batch's id: to page.

    Attempts at a commit are stored one after another under the suite's lock, so the
    latest has the largest id. Uploads without a commit, each an attempt of its own, make
    one group (commit "")."""
    return (patch_batches(suite, patch).values("commit")
            .annotate(first_at=Min("created_at"), uploads=Count("pk"), latest=Max("pk"))
            .order_by("-first_at", "commit"))


class SentCounts(NamedTuple):
    """An attempt's own records, as sent, by property check; and the nodes it left out,
    judged on their records from earlier attempts."""

    passed: int = 0
    failed: int = 0
    not_run: int = 0
    carried: int = 0


class PatchAttempt(NamedTuple):
    batch: VerdictBatch
    sent: SentCounts


class Flip(NamedTuple):
    """A node that flipped at the commit, as read from its latest attempt's row."""

    nodeid: str
    key: str
    first_in: int | None  # the attempt where it first flipped


@dataclass(frozen=True)
class PatchCommit:
    commit: str  # "" for the uploads without a commit
    uploads: int
    attempts: list[PatchAttempt]  # in order: the first ATTEMPTS_SHOWN, then the latest
    flips: list[Flip]
    flip_count: int

    @property
    def latest(self) -> VerdictBatch:
        return self.attempts[-1].batch

    @property
    def hidden(self) -> int:
        """Attempts not shown, between the first ones and the latest."""
        return self.uploads - len(self.attempts)


def _attempts(suite: Suite, patch: str, groups: list[dict]) -> list[VerdictBatch]:
    """The first ATTEMPTS_SHOWN batches of each group's commit, and its latest."""
    commits = [group["commit"] for group in groups]
    latest = [group["latest"] for group in groups]
    in_order = Window(RowNumber(), partition_by=[F("commit")], order_by=[F("attempt"), F("pk")])
    return list(patch_batches(suite, patch).filter(commit__in=commits)
                .annotate(row=in_order).filter(Q(row__lte=ATTEMPTS_SHOWN) | Q(pk__in=latest))
                .order_by("commit", "attempt", "pk"))


def _sent_counts(batch_ids: list[int]) -> dict[int, SentCounts]:
    """Each batch's rows by property check as sent, and the rows it carried."""
    tally: dict[int, dict[str, int]] = {pk: {} for pk in batch_ids}
    rows = (NodeVerdict.objects.filter(batch_id__in=batch_ids)
            .values_list("batch_id", "sent", "property_check").annotate(n=Count("pk"))
            .order_by())
    field = {rules.PropertyCheck.PASS: "passed", rules.PropertyCheck.FAIL: "failed",
             rules.PropertyCheck.NOT_RUN: "not_run"}
    for batch_id, sent, check, n in rows:
        name = field[rules.PropertyCheck(check)] if sent else "carried"
        tally[batch_id][name] = tally[batch_id].get(name, 0) + n
    return {pk: SentCounts(**counts) for pk, counts in tally.items()}


def _flips(latest: list[int]) -> dict[int, tuple[list[Flip], int]]:
    """The nodes flipped by each of the ``latest`` batches (flipped rows stay flipped in
    every later attempt, so the latest holds them all): the first FLIPS_SHOWN, and how
    many there are."""
    in_order = Window(RowNumber(), partition_by=[F("batch_id")], order_by=[F("position")])
    total = Window(Count("pk"), partition_by=[F("batch_id")])
    rows = (NodeVerdict.objects.filter(batch_id__in=latest, flipped=True)
            .annotate(row=in_order, total=total).filter(row__lte=FLIPS_SHOWN)
            .order_by("batch_id", "position")
            .values_list("batch_id", "node__nodeid", "node__key", "attempts", "total"))
    found: dict[int, tuple[list[Flip], int]] = {}
    for batch_id, nodeid, key, seen, count in rows:
        flips, _ = found.setdefault(batch_id, ([], count))
        first = first_flip(*rules.NodeAttempts.from_answer(seen).flaky_evidence) if seen else None
        flips.append(Flip(nodeid, key, first))
    return found


def commit_rows(suite: Suite, patch: str, groups) -> list[PatchCommit]:
    """A page of ``patch_commits`` as the page shows it, in four queries."""
    groups = list(groups)
    batches = _attempts(suite, patch, groups)
    counts = _sent_counts([batch.pk for batch in batches])
    by_commit: dict[str, list[PatchAttempt]] = {}
    for batch in batches:
        by_commit.setdefault(batch.commit, []).append(PatchAttempt(batch, counts[batch.pk]))
    # Uploads without a commit never flip: each is judged on its own.
    flips = _flips([group["latest"] for group in groups if group["commit"]])
    return [
        PatchCommit(group["commit"], group["uploads"], by_commit[group["commit"]],
                    *flips.get(group["latest"], ([], 0)))
        for group in groups
    ]
