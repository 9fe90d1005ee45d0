"""Each row of the flaky-tests page shows the evidence it is listed for (issue 55, point 1):
a flip its attempts and the attempts that failed it, a new test flaky at birth the guard's
runs and failures, a JUnit test its runs in JUnit files. Its JUnit column, for a row whose
evidence is not JUnit's, says once that JUnit has none, or that JUnit ran it and never saw
it flaky: never a row of zeros beside the sentence that says it flipped."""

from __future__ import annotations

import re
from urllib.parse import parse_qs

from django.urls import reverse

from flakeboard import rules
from junit.ingest import junit_ingest
from junit.rules import FlakyFigures
from tests import test_flaky_page
from tests.junit_files import junit_xml
from tests.test_flaky_at_birth import born
from tests.test_flaky_flips import FLIPPED, JUNIT, flip, junit_flake

flaky_page = test_flaky_page.flaky_page  # a fixture: the page as its owner reads it


def passed_in_junit(suite, nodeid: str, *, times: int):
    """``times`` CI jobs of a commit in which ``nodeid`` passed: JUnit ran it, and never
    saw it flaky."""
    xml = junit_xml(("tests.test_a", nodeid.rpartition("::")[2], "passed"))
    for job in range(times):
        junit_ingest(
            suite=suite,
            body=xml,
            actor="ci",
            query={"commit": "j9", "branch": "main", "job": f"job{job}"},
        )


def cells(html: str, row) -> dict[str, str]:
    """A row's figures, by their labels, as the page shows them (tags left out)."""
    start = html.index(f'id="flaky-{row.node.pk}"')
    part = html[start : html.index("</tr>", start)]
    return {
        label: re.sub(r"<[^>]+>", "", value).strip()
        for label, value in re.findall(r'<td[^>]*data-label="([^"]+)">(.*?)</td>', part, re.DOTALL)
    }


def rate(fails: int, runs: int) -> str:
    """A rate as the page says it: with its Wilson upper bound, to three decimals."""
    return f"{fails / runs:.3f} ({rules.upper95(fails, runs):.3f})"


def test_each_row_shows_its_own_evidence(suite, flaky_page):
    flip(suite)  # FLIPPED: failed in attempt 1, passed in attempt 2
    born(suite)  # BORN: 6 of the guard's 30 runs failed
    junit_flake(suite, JUNIT)
    passed_in_junit(suite, FLIPPED, times=3)  # JUnit ran it three times, never flaky
    response = flaky_page()
    flipped, birth, junit = response.context["rows"]
    html = response.content.decode()
    today = flipped.flip.day.isoformat()  # every upload above is of today
    assert cells(html, flipped) == {
        "Why flaky": f"Unknown: why {FLIPPED} is flaky",
        "Failed attempts": "1",
        "Attempts": "2",
        "Rate (upper95)": rate(1, 2),
        "Flaky commits": "1",
        "Seen flaky": today,
        "JUnit, 30 days": "not flaky in 3 JUnit runs",
    }
    assert cells(html, birth) == {
        "Why flaky": f"Unknown: why {birth.node.nodeid} is flaky",
        "Failed runs": "6",
        "Runs at birth": "30",
        "Rate (upper95)": rate(6, 30),
        "Flaky commits": "1",
        "Seen flaky": today,
        "JUnit, 30 days": "not in JUnit files",
    }
    shown = cells(html, junit)
    assert (shown["Flaky failures"], shown["Runs"], shown["Seen flaky"]) == ("1", "2", today)
    assert "1 day flaky" in shown["JUnit, 30 days"]
    assert flipped.evidence.figures == FlakyFigures(
        runs=2, failures=1, flaky_failures=1, flaky_commits=1
    )
    assert birth.evidence.figures == FlakyFigures(
        runs=30, failures=6, flaky_failures=6, flaky_commits=1
    )
    assert junit.evidence.figures == junit.figures


def test_a_flip_also_flaky_in_junit_keeps_its_junit_column(suite, flaky_page):
    """Its figures and its Quarantine prefill are the flip's; its JUnit column JUnit's."""
    batch = flip(suite)
    junit_flake(suite, FLIPPED, commit="j2", times=2)
    response = flaky_page()
    (row,) = response.context["rows"]
    assert row.evidence.figures.runs == 2  # the flip's attempts
    assert row.figures.flaky_failures == 2  # JUnit's, in the JUnit column
    assert "1 day flaky" in cells(response.content.decode(), row)["JUnit, 30 days"]
    query = parse_qs(row.quarantine_query)
    assert (query["n"], query["fails"]) == (["2"], ["1"])
    assert query["evidence"][0].endswith(reverse("batch", args=[suite.slug, batch.pk]))
