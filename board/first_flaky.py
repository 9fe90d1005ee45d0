"""The tests that turned flaky, as the trackers' triggers ask for them
(``trackers.triggers``): a test's first flaky evidence in CI (a flip between gate attempts,
or a flaky failure in CI's JUnit files) and a new test flaky at birth, each read from the
rankings the flaky-tests page lists (``board.flaky``), over all the days the board holds."""

from __future__ import annotations

from datetime import date, timedelta
from functools import partial

from django.conf import settings

from flakeboard.rules.text import plural
from junit.selectors import Window, flaky_days
from ledger.models import Node, Suite

from .births import birth_rows
from .flaky import FlakyRanking, flaky_page_rows
from .flips import flipped_rows

# The board's whole history: every day since this one counts.
EPOCH = date(2000, 1, 1)


def _ever(today: date) -> Window:
    return Window(today, days=(today - EPOCH).days + 1)


def _days(first: date, last: date) -> Window:
    """The days from ``first`` to ``last``, both included."""
    return Window(last, days=(last - first).days + 1)


def _firsts(kinds, since: date, today: date) -> list[int]:
    """The nodes with evidence of one of ``kinds`` (each a function of the suite's rows
    in a window, as the flaky-tests page reads them) from ``since`` to ``today``, and none
    before: only the days since are aggregated, and the older rows only looked up."""
    recent = set()
    for rows in kinds:
        recent |= set(rows(_days(since, today)).values_list("node_id", flat=True))
    if not recent or since <= EPOCH:
        return sorted(recent)
    before = _days(EPOCH, since - timedelta(days=1))
    for rows in kinds:
        recent -= set(rows(before).filter(node_id__in=recent)
                      .values_list("node_id", flat=True))
    return sorted(recent)


def ci_firsts(suite: Suite, since: date, today: date) -> list[int]:
    return _firsts([partial(flipped_rows, suite), partial(flaky_days, suite)], since, today)


def birth_firsts(suite: Suite, since: date, today: date) -> list[int]:
    return _firsts([partial(birth_rows, suite)], since, today)


def _row(suite: Suite, node: Node, today: date, kinds: tuple[str, ...]):
    """The node's row of the flaky-tests page, with the first of ``kinds`` of evidence
    it has (keys of ``board.flaky.EVIDENCE``)."""
    window = _ever(today)
    for kind in kinds:
        ranked = FlakyRanking(suite, window, nodes=[node], evidence=kind)[0:1]
        if ranked:
            return flaky_page_rows(suite, window, ranked, headings=False)[0]
    return None


def _link(path: str) -> str:
    return settings.BASE_URL.rstrip("/") + path


def _lines(row) -> list[str]:
    if row is None:
        return []
    figures, lines = row.evidence.figures, []
    if flip := row.flip:
        lines.append(f"Flipped between gate attempts at commit {flip.commit} on "
                     f"{flip.day.isoformat()}: {flip.failed} failed it, {flip.passed} passed "
                     f"it ({_link(flip.url)}).")
    elif birth := row.birth:
        lines.append(f"Flaky at birth at commit {birth.commit} on {birth.day.isoformat()}, "
                     f"in the new-test guard's runs ({_link(birth.url)}).")
    else:
        lines.append(f"Flaky in CI's JUnit files from {row.first_flaky.isoformat()} to "
                     f"{row.last_flaky.isoformat()}.")
    lines.append(f"{row.evidence.failed}: {figures.flaky_failures}; "
                 f"{row.evidence.runs.lower()}: {figures.runs} (rate {figures.rate:.2%}, upper "
                 f"95% bound {figures.upper95:.2%}); flaky at "
                 f"{plural(figures.flaky_commits, 'commit')}.")
    return lines


def ci_evidence(suite: Suite, node: Node, today: date) -> list[str]:
    return _lines(_row(suite, node, today, ("flipped", "junit")))


def birth_evidence(suite: Suite, node: Node, today: date) -> list[str]:
    return _lines(_row(suite, node, today, ("birth",)))
