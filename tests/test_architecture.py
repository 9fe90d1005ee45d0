"""The layout shows the architecture, and the imports keep it.

Dependencies point one way: ``runs`` → ``junit`` (passive evidence) → ``ledger`` →
``flakeboard.rules``, and ``notify`` (the owners' digests) → ``ledger``. ``runs`` reads
junit's selectors (the targets file, the node page's passive history, the overview's
tile); junit never imports ``runs``. ``web`` is the
plumbing both apps' pages, API and commands share (access checks, page rendering and
lists, token auth, the API error shape, the commands' suite lookup); it stands on
``ledger``'s models and never reaches up into ``runs`` or into an app's views, API or
commands. Read from the source with ``ast``: nothing is imported to check it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_CONFIG_LINES = 300

# (package, modules it must not import, why)
FORBIDDEN = [
    ("ledger", ["runs", "junit", "notify"],
     "runs, junit and notify build on the ledger, never the other way"),
    ("runs", ["ledger.views", "ledger.api", "ledger.management", "junit.views", "junit.api",
              "junit.management"],
     "shared web plumbing lives in web, not inside an app; runs reads junit's selectors"),
    ("junit", ["runs", "ledger.views", "ledger.api", "ledger.management"],
     "junit builds on the ledger and web; runs builds on junit, never the other way"),
    ("web", ["runs", "junit", "notify", "ledger.views", "ledger.api", "ledger.management"],
     "web sits below the apps' views, API and commands"),
    ("notify", ["runs", "junit", "ledger.views", "ledger.api", "ledger.management"],
     "notify → ledger → rules: the digests read the ledger's states, never the uploads"),
]
# The junit app's rules, signatures and node-id mapping: pure Python, like the gate's rules.
JUNIT_PURE = ["junit/rules.py", "junit/signatures.py", "junit/nodeids.py"]
# Where the shared plumbing used to live inside the ledger app; it is in web now.
FORMER_PLUMBING = [
    "ledger/access.py",
    "ledger/views_common.py",
    "ledger/api/auth.py",
    "ledger/api/errors.py",
    "ledger/api/openapi.py",
]


def python_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports, relative imports made absolute. ``from a import b``
    counts as importing both ``a`` and ``a.b``, since ``b`` may be a module."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package.pop()
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def is_within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def violations(package: str, forbidden: list[str]) -> list[str]:
    return sorted(
        f"{path.relative_to(ROOT)} imports {module}"
        for path in python_files(package)
        for module in imported(path)
        if any(is_within(module, prefix) for prefix in forbidden)
    )


def test_the_rules_import_only_the_standard_library():
    """No Django, no app, no configuration: the rules are pure Python."""
    outside = sorted(
        f"{path.relative_to(ROOT)} imports {module}"
        for path in python_files("flakeboard/rules")
        for module in imported(path)
        if module.split(".")[0] not in sys.stdlib_module_names
        and not is_within(module, "flakeboard.rules")
    )
    assert outside == []


def test_the_junit_rules_import_only_the_standard_library_and_the_rules():
    """The gate's rules are pure too (above): the junit rules may build on them."""
    outside = sorted(
        f"{name} imports {module}"
        for name in JUNIT_PURE
        for module in imported(ROOT / name)
        if module.split(".")[0] not in sys.stdlib_module_names
        and module not in {"junit", *(n.removesuffix(".py").replace("/", ".") for n in JUNIT_PURE)}
        and module != "flakeboard" and not is_within(module, "flakeboard.rules")
    )
    assert outside == []


@pytest.mark.parametrize(("package", "forbidden", "why"), FORBIDDEN,
                         ids=[package for package, _, _ in FORBIDDEN])
def test_dependencies_point_one_way(package, forbidden, why):
    assert violations(package, forbidden) == [], why


def test_the_shared_plumbing_is_not_in_the_ledger_app_any_more():
    assert [name for name in FORMER_PLUMBING if (ROOT / name).exists()] == []
    # The commands' helpers are in web.commands; the package marker defines nothing.
    assert ast.parse((ROOT / "ledger/management/__init__.py").read_text()).body == []


def test_the_configuration_modules_are_small():
    long = {
        str(path.relative_to(ROOT)): lines
        for path in python_files("flakeboard")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_CONFIG_LINES
    }
    assert long == {}


def test_relative_imports_are_read_as_absolute():
    """The checks above see ``from ..forms.entries import X`` as ledger.forms.entries."""
    found = imported(ROOT / "ledger/views/ledger.py")
    assert {"ledger.forms.entries", "web.pages", "ledger.models"} <= found
    assert "runs.views" in imported(ROOT / "runs/urls.py")
