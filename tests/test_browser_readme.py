"""tests/browser/README.md lists every browser journey: its table holds one row for each
test file of tests/browser/, and no row for a file that is not there. Read without a
browser: the list is checked wherever the tests run."""

from __future__ import annotations

import re

from tests.docs_text import ROOT, doc_text

BROWSER = ROOT / "tests" / "browser"
README = "tests/browser/README.md"
# A row of the journeys' table: its first cell is a file name in a code span.
ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|", re.MULTILINE)


def listed(text: str) -> list[str]:
    """The file names of a README's journey table, in its order."""
    return ROW.findall(text)


def test_the_readme_lists_every_journey_file_and_no_other():
    names = listed(doc_text(README))
    assert len(names) == len(set(names)), f"a journey is listed twice in {README}"
    files = {path.name for path in BROWSER.glob("test_*.py")}
    assert files, "no journey file found"
    assert sorted(files - set(names)) == [], f"journeys missing from {README}"
    assert sorted(set(names) - files) == [], f"rows of {README} with no file"


def test_a_row_is_read_by_its_first_cell_only():
    text = (
        "| file | journey |\n|---|---|\n"
        "| `test_journey_retry.py` | a gate retried: see `test_other.py` |\n"
        "Prose naming `test_prose.py` is no row.\n"
    )
    assert listed(text) == ["test_journey_retry.py"]
