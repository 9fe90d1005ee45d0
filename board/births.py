"""New tests flaky at birth (docs/new-tests.md), read as flaky evidence: a measurement of a
new test that both passed and failed in the new-test guard's runs at the commit that added
it, judged ``new_test_flaky``. Its report failed; the test may have been merged anyway, or
may come back in the next pull request. The flaky-tests page lists it and the targets file
offers it to measure, as it does a flip.

A measurement belongs to a window by its report's day, and to a branch by its report's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from django.db.models import Count, Max, Min
from django.urls import reverse

from flakeboard import rules
from junit.selectors import Window
from ledger.models import Suite
from runs.broken import counts
from runs.models import Measurement


def birth_rows(suite: Suite, window: Window):
    """The suite's measurements judged flaky at birth whose report's day is in the window
    (and on its branch, holding its text)."""
    rows = Measurement.objects.filter(window.q("report__day"), suite=suite,
                                      reason=rules.Reason.NEW_TEST_FLAKY)
    if window.branch:
        rows = rows.filter(report__branch=window.branch)
    if window.text:
        rows = rows.filter(node__nodeid__icontains=window.text)
    return rows


def birth_ranking(suite: Suite, window: Window, rows=None):
    """The nodes flaky at birth in the window (or in ``rows``, some of its ``birth_rows``),
    the latest first: values rows of ``node_id``, ``first_flaky`` and ``last_flaky`` (days,
    as the JUnit ranking has them), ``born_commits`` (the commits it was flaky at birth at)
    and ``last_measurement``."""
    rows = birth_rows(suite, window) if rows is None else rows
    return (
        rows.values("node_id")
        .annotate(first_flaky=Min("report__day"), last_flaky=Max("report__day"),
                  born_commits=Count("report__commit", distinct=True),
                  last_measurement=Max("pk"))
        .order_by("-last_measurement", "node_id")
    )


@dataclass(frozen=True)
class Birth:
    """A node's latest measurement flaky at birth: its report's commit, day and page, and
    the guard's runs there (pooled over the commit's reports when there were several)."""

    commit: str
    report: int
    url: str
    day: date
    n: int
    fails: int

    @property
    def sentence(self) -> str:
        return rules.birth_sentence(self.n, self.fails)


def births(suite: Suite, ranked: list[dict]) -> dict[int, Birth]:
    """The latest birth of each ``birth_ranking`` row in ``ranked``, by node: one query."""
    pks = [row["last_measurement"] for row in ranked if "last_measurement" in row]
    found: dict[int, Birth] = {}
    if not pks:
        return found  # a page without births reads nothing more
    for m in Measurement.objects.filter(pk__in=pks).select_related("report"):
        n, fails = counts(m)
        found[m.node_id] = Birth(m.report.commit, m.report_id,
                                 reverse("report", args=[suite.slug, m.report_id]),
                                 m.report.day, n, fails)
    return found
