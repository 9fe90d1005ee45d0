"""The layout shows the architecture, and the imports keep it.

The layers, bottom to top: ``flakeboard.rules`` (pure), ``web`` (HTTP plumbing that touches
no model), ``ledger`` (the tenant root: suites, members, tokens, access, the ledger),
``runs`` | ``junit`` | ``notify`` | ``trackers`` (siblings that never import each other),
``board`` (the pages that compose them), then the URL and API configuration.
import-linter's contracts in pyproject.toml say so; the tests below hold each contract kept
and prove that each bites.
The rules' purity is also read from the source with ``ast``: nothing is imported for it.
"""

from __future__ import annotations

import ast
import copy
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_CONFIG_LINES = 300

# The junit app's rules and node-id mapping: pure Python, like the gate's rules (the failure
# signatures are among them, flakeboard/rules/signatures.py).
JUNIT_PURE = ["junit/rules.py", "junit/nodeids.py"]
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


def test_the_configuration_modules_are_small():
    long = {
        str(path.relative_to(ROOT)): lines
        for path in python_files("flakeboard")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_CONFIG_LINES
    }
    assert long == {}


def test_relative_imports_are_read_as_absolute():
    """The checks above see ``from .forms.entries import X`` as ledger.forms.entries."""
    assert {"ledger.forms.entries", "ledger.models", "flakeboard.rules"} <= imported(
        ROOT / "ledger/rows.py"
    )


# The layers themselves are import-linter's contracts in pyproject.toml (`lint-imports`,
# run by `make test`). Here: each contract is kept, and each one bites when an import
# against it is added to the real graph.
@pytest.fixture(scope="module")
def contracts():
    from importlinter import api
    from importlinter.application import use_cases

    use_cases._register_built_in_contract_types()
    config = api.read_configuration(str(ROOT / "pyproject.toml"))
    session = config["session_options"]
    graph = grimp.build_graph(*session["root_packages"],
                              include_external_packages=True, cache_dir=None)
    return graph, session, {c["id"]: c for c in config["contracts_options"]}


def kept(contracts, contract_id: str, *added: tuple[str, str]) -> bool:
    from importlinter.domain.contract import registry

    graph, session, options = contracts
    graph = copy.deepcopy(graph)
    for importer, module in added:
        graph.add_import(importer=importer, imported=module, line_number=1,
                         line_contents=f"import {module}")
    contract = registry.get_contract_class(options[contract_id]["type"])(
        name=options[contract_id]["name"], session_options=session,
        contract_options=options[contract_id],
    )
    return contract.check(graph, verbose=False).kept


def test_the_contracts_are_the_ones_the_architecture_names(contracts):
    _, _, options = contracts
    assert set(options) == {"layers", "pure-rules", "configuration", "no-circles"}
    layers = options["layers"]["layers"]
    assert layers[1:] == ["board", "runs | junit | notify | trackers", "ledger", "web",
                          "flakeboard.rules"]
    text = (ROOT / "docs/architecture.md").read_text(encoding="utf-8")
    assert all(f"`{package}`" in text for package in ["board", "runs", "junit", "notify",
                                                     "trackers", "ledger", "web",
                                                     "flakeboard.rules"])


@pytest.mark.parametrize("contract_id", ["layers", "pure-rules", "configuration", "no-circles"])
def test_each_contract_is_kept(contracts, contract_id):
    assert kept(contracts, contract_id)


@pytest.mark.parametrize(("contract_id", "importer", "module"), [
    ("layers", "web.pages", "ledger.models"),  # web reaches up into an app
    ("layers", "runs.ingest", "junit.models"),  # two siblings
    ("layers", "junit.ingest", "runs.models"),
    ("layers", "notify.digests", "runs.models"),
    ("layers", "ledger.quarantine", "trackers.sync"),  # the ledger reaches up into trackers
    ("layers", "trackers.sync", "notify.webhooks"),  # two siblings
    ("layers", "ledger.selectors", "board.flaky"),  # an app reaches up into the board
    ("layers", "board.flaky", "flakeboard.urls"),  # into the configuration
    ("pure-rules", "flakeboard.rules.stats", "django"),
    ("pure-rules", "flakeboard.rules.stats", "ledger.models"),
    ("configuration", "runs.ingest", "flakeboard.settings"),
    ("no-circles", "ledger.predicates", "ledger.models"),  # models import predicates
])
def test_each_contract_bites(contracts, contract_id, importer, module):
    assert not kept(contracts, contract_id, (importer, module))
