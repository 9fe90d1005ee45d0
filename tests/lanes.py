"""A module every test of which ``-m`` leaves out is not imported at all: conftest.py takes
``pytest_ignore_collect`` from here. The fast lane (``-m "not slow and not browser and not
fuzz"``) then skips the import of the browser journeys, the API fuzzing (whose schema is
built at import) and the real-process modules, and the assertion rewriting of each, in every
worker. A module is left out only when its module-level ``pytestmark`` alone decides the
expression false, whatever marks its tests add: the lane's tests are the same ones."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from _pytest.mark.expression import Expression

# The module-level assignment, up to the blank line that ends it (ruff's format).
PYTESTMARK = re.compile(r"^pytestmark\s*=(.*?)(?:\n\s*\n|\Z)", re.MULTILINE | re.DOTALL)
MARK = re.compile(r"\bpytest\.mark\.(\w+)")
NAME = re.compile(r"\b(?!(?:and|or|not)\b)[A-Za-z_]\w*")


def module_marks(source: str) -> set[str] | None:
    """The marks a module's ``pytestmark`` gives each of its tests (None: it has none)."""
    found = PYTESTMARK.findall(source)
    if len(found) != 1:
        return None
    return set(MARK.findall(found[0]))


def left_out(markexpr: str, marks: set[str]) -> bool:
    """True when a test carrying ``marks`` is deselected by ``markexpr`` whatever other
    marks named in the expression it carries besides."""
    expression = Expression.compile(markexpr)
    others = sorted(set(NAME.findall(markexpr)) - marks)
    for count in range(len(others) + 1):
        for extra in itertools.combinations(others, count):
            carried = frozenset(marks | set(extra))
            if expression.evaluate(carried.__contains__):
                return False
    return True


def pytest_ignore_collect(collection_path: Path, config) -> bool | None:
    markexpr = config.getoption("markexpr", "")
    if not markexpr or collection_path.suffix != ".py" or not collection_path.is_file():
        return None
    if not collection_path.name.startswith("test_"):
        return None
    marks = module_marks(collection_path.read_text(encoding="utf-8"))
    if marks is None:
        return None
    return True if left_out(markexpr, marks) else None
