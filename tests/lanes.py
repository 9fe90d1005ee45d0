"""A module every test of which ``-m`` leaves out is not imported at all: conftest.py takes
``pytest_ignore_collect`` from here. The fast lane (``-m "not slow and not browser and not
fuzz"``) then skips the import of the browser journeys, the API fuzzing (whose schema is
built at import) and the real-process modules, and the assertion rewriting of each, in every
worker. A module is left out only when its module-level ``pytestmark`` alone decides the
expression false, whatever marks its tests add: the lane's tests are the same ones. A folder
all of whose test modules are left out is not entered either, so its conftest.py is not
imported (the browser journeys' imports Playwright)."""

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


def module_left_out(path: Path, markexpr: str) -> bool:
    marks = module_marks(path.read_text(encoding="utf-8"))
    return marks is not None and left_out(markexpr, marks)


def pytest_ignore_collect(collection_path: Path, config) -> bool | None:
    markexpr = config.getoption("markexpr", "")
    if not markexpr:
        return None
    if collection_path.is_dir():
        modules = sorted(collection_path.rglob("test_*.py"))
        if modules and all(module_left_out(module, markexpr) for module in modules):
            return True
        return None
    if collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    return True if module_left_out(collection_path, markexpr) else None


def marks_on_helpers(source: str) -> list[str]:
    """The module-level functions of a test module that carry a ``pytest.mark`` but are
    no test (a helper, not a fixture): pytest reads marks from tests only, so such a mark
    puts nothing in its lane, and the test it was written for runs where it should not."""
    import ast

    found = []
    for node in ast.parse(source).body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        decorators = [ast.unparse(decorator) for decorator in node.decorator_list]
        if node.name.startswith("test") or any("fixture" in d for d in decorators):
            continue
        if any(d.startswith("pytest.mark.") for d in decorators):
            found.append(node.name)
    return found
