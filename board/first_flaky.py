"""The tests that turned flaky, as the trackers' triggers ask for them
(``trackers.triggers``): a test's first flaky evidence in CI (a flip between gate attempts,
or a flaky failure in CI's JUnit files) and a new test flaky at birth, each read from the
rankings the flaky-tests page lists (``board.flaky``), over all the days the board holds."""

from __future__ import annotations

from datetime import date

from django.conf import settings

from flakeboard.rules.text import plural
from junit.selectors import Window, flaky_ranking
from ledger.models import Node, Suite

from .births import birth_ranking
from .flaky import FlakyRanking, flaky_page_rows
from .flips import flip_ranking

# The board's whole history: every day since this one counts.
EPOCH = date(2000, 1, 1)


def _ever(today: date) -> Window:
    return Window(today, days=(today - EPOCH).days + 1)


def _firsts(rankings, since: date) -> list[int]:
    """The nodes whose earliest day in any of ``rankings`` is ``since`` or later."""
    first: dict[int, date] = {}
    for ranking in rankings:
        for row in ranking.values("node_id", "first_flaky"):
            day = row["first_flaky"]
            first[row["node_id"]] = min(day, first.get(row["node_id"], day))
    return sorted(node_id for node_id, day in first.items() if day >= since)


def ci_firsts(suite: Suite, since: date, today: date) -> list[int]:
    window = _ever(today)
    return _firsts([flip_ranking(suite, window), flaky_ranking(suite, window)], since)


def birth_firsts(suite: Suite, since: date, today: date) -> list[int]:
    return _firsts([birth_ranking(suite, _ever(today))], since)


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
