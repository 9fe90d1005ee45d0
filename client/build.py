#!/usr/bin/env python3
"""Assemble client/flakeboard_ci.py, the one file the board serves (and pytest workers load
as a plugin), from the modules of client/src/flakeboard_ci/.

The modules are kept apart so that each can be read, linted and edited alone; CI must get
one file with nothing to install. So the build writes the shebang and core's docstring,
one block of every module's standard-library imports, then each module's body, in MODULES'
order, without its docstring and imports: in one file the sibling imports are not needed.
It refuses a module that imports anything but the standard library and its siblings, two
modules that define one name, and a module that uses a later module's name at import time.

    python client/build.py          # writes client/flakeboard_ci.py (make client)
    python client/build.py --check  # exit 1 when client/flakeboard_ci.py is not the assembly

The assembly carries its build: ``SOURCE_HASH``, a hash of the file as assembled before
the stamp, so any change under src changes it. ``--version`` prints it, the client sends
it with every request, and the board serves it as the file's ETag.

Python 3.8+ and the standard library only, as the client itself.
"""

from __future__ import annotations

import argparse
import ast
import functools
import hashlib
import importlib.util
import os
import re
import sys
import sysconfig
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = HERE / "src" / "flakeboard_ci"
TARGET = HERE / "flakeboard_ci.py"
SHEBANG = "#!/usr/bin/env python3"
LINE_LENGTH = 100  # pyproject.toml's, so that ruff reads the import block as sorted
SEPARATOR_WIDTH = 88
# core.py's placeholder, which the assembly replaces with the build's hash.
UNSTAMPED = 'SOURCE_HASH = "unbuilt"'
STAMP_LENGTH = 16

# The served file's order, each module with the title of its separator line. A module's
# import-time code (constants, default arguments, base classes, decorators) may use names
# of the modules before it only. The first module's docstring is the served file's.
MODULES = (
    ("core", "constants, exceptions, the argument parser"),
    ("board", "talking to the board"),
    ("stats", "the Wilson bounds, and a new test's bound in words"),
    ("outputs", "presenting the board's answer"),
    ("ledger", "the ledger command and its cache"),
    ("report", "the report and signals commands"),
    ("junit", "passive evidence from the JUnit XML a CI job already writes"),
    ("seeding", "each run's randomness from its PATCH_SEED"),
    ("measure_bisect", "the bisection to the tests an order-dependent target depends on"),
    ("measure_runs", "a target's runs: Wilson bounds, early stop, classification"),
    ("measure_schedule", "measure's schedule: the blocks of runs, within a deadline"),
    ("measure_workspace", "measure's folder, and the plugin compiled into it early"),
    ("measure_pool", "measure's pool of pytest worker processes"),
    ("measure_sources", "what measure's pool runs: the blocks of runs, forked or fresh"),
    ("measure_checks", "the checks in CI's order: isolation, the session, the bisection"),
    ("measure_progress", "measure's progress on stderr, and its summary"),
    ("measure_experiments", "the diagnosis's experiments: seeds replayed, CPU load"),
    ("measure", "the measure command: the flake budget's evidence, fast"),
    ("measure_batch", "a test's runs in a row, under one pass of pytest's protocol"),
    ("measure_worker", "measure's workers from the inside"),
    ("pin", "the fixture manifest and the pin command"),
    ("arbiter", "the board's precedence table, for judging here"),
    ("gate_recorder", "gate's pytest run from the inside: each selected node's outcome"),
    ("impact", "test impact analysis: the source files each test executes"),
    ("patch_class", "gate --diff: the patch's class, from its added lines"),
    ("failure_labels", "the one line that explains each failed node to its author"),
    ("failure_lines", "each failed node's line, from the board, and again once measured"),
    ("gate_plan", "what a patch's gate measures, in which order, within its budget"),
    ("gate_measure", "gate --measure: tier 2 measured with the class's repeat budget"),
    ("gate", "the gate command: a pytest run's signal records, arbitrated"),
    ("replay", "the replay command: a flaky run again, at its seed or under load"),
    ("plugin", "this file as the pytest plugin measure's workers and gate load"),
    ("cli", "the command line, the entry point"),
)


class BuildError(Exception):
    """The modules cannot make the served file: the message says which and why."""


def is_stdlib(name):
    """Whether the top-level package of module ``name`` is in the standard library."""
    top = name.partition(".")[0]
    if hasattr(sys, "stdlib_module_names"):  # Python 3.10+
        return top in sys.stdlib_module_names
    if top in sys.builtin_module_names:
        return True
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.origin:
        return False
    paths = sysconfig.get_paths()
    roots = {os.path.realpath(paths[key]) for key in ("stdlib", "platstdlib")}
    origin = os.path.realpath(spec.origin)
    inside = any(origin.startswith(root + os.sep) for root in roots)
    return inside and "site-packages" not in origin and "dist-packages" not in origin


class Module:
    """One source module, parsed: what it imports, what it defines, and its body."""

    def __init__(self, name, title, path, siblings):
        self.name, self.title, self.path = name, title, path
        try:
            self.source = path.read_bytes().decode("utf-8")
            self.tree = parsed(self.source, str(path))
        except (OSError, UnicodeDecodeError, SyntaxError) as exc:
            raise BuildError(f"cannot read {path}: {exc}") from None
        self.lines = self.source.splitlines()
        self.docstring = None  # the (first, last) line of the docstring
        self.imports = set()  # ("import", module, alias) or ("from", module, name, alias)
        self.sibling_names = {}  # name -> the sibling module it is imported from
        dropped = []
        for statement in self.tree.body:
            if self._drops(statement, siblings):
                dropped.append(statement)
        self._check_nested_imports()
        self.dropped_lines = {line for statement in dropped
                              for line in range(statement.lineno, statement.end_lineno + 1)}
        for statement in self.tree.body:
            if statement not in dropped and (
                    statement.lineno in self.dropped_lines
                    or statement.end_lineno in self.dropped_lines):
                raise BuildError(f"{self.where(statement)}: put each import on a line of "
                                 f"its own, so that it can be taken out")
        self.defines = defined_names(self.tree)

    def where(self, node):
        return f"{self.name}.py:{node.lineno}"

    def _drops(self, statement, siblings):
        """Record an import or the docstring; True when the build takes it out of the body."""
        if statement is self.tree.body[0] and is_string(statement):
            self.docstring = (statement.lineno, statement.end_lineno)
            return True
        if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
            features = [alias.name for alias in statement.names]
            if features != ["annotations"]:
                raise BuildError(f"{self.where(statement)}: the served file has "
                                 f"`from __future__ import annotations` only, not {features}")
            return True
        if isinstance(statement, ast.ImportFrom) and statement.level:
            self._sibling_import(statement, siblings)
            return True
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                self._stdlib(statement, alias.name)
                self.imports.add(("import", alias.name, alias.asname))
            return True
        if isinstance(statement, ast.ImportFrom):
            self._stdlib(statement, statement.module)
            for alias in statement.names:
                if alias.name == "*":
                    raise BuildError(f"{self.where(statement)}: name what it imports "
                                     f"from {statement.module}, not *")
                self.imports.add(("from", statement.module, alias.name, alias.asname))
            return True
        return False

    def _stdlib(self, statement, module):
        if not is_stdlib(module):
            raise BuildError(f"{self.where(statement)} imports {module}, which is not in "
                             f"the standard library: the served file must run with "
                             f"nothing installed")

    def _sibling_import(self, statement, siblings):
        sibling = statement.module
        if statement.level != 1 or sibling not in siblings:
            raise BuildError(f"{self.where(statement)}: import names from a sibling "
                             f"module of build.py's MODULES, as in `from .board import "
                             f"Board`")
        for alias in statement.names:
            if alias.asname or alias.name == "*":
                raise BuildError(f"{self.where(statement)}: import {sibling}'s names as "
                                 f"they are (no `as`, no *): the served file has one "
                                 f"namespace")
            self.sibling_names[alias.name] = sibling

    def _check_nested_imports(self):
        """An import inside a function or block stays where it is: it must be absolute and
        of the standard library."""
        for node in nested_imports(self.tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                raise BuildError(f"{self.where(node)}: import sibling names at the top of "
                                 f"the module, where the build takes them out")
            modules = [node.module] if isinstance(node, ast.ImportFrom) else \
                [alias.name for alias in node.names]
            for module in modules:
                self._stdlib(node, module)

    def body(self):
        """The module's source without its docstring and imports, blank lines trimmed."""
        kept = [line for number, line in enumerate(self.lines, 1)
                if number not in self.dropped_lines]
        return "\n".join(kept).strip("\n")

    def import_bindings(self):
        """The names the module's standard-library imports bind, and what binds them."""
        bindings = {}
        for entry in self.imports:
            if entry[0] == "import":
                _, module, alias = entry
                if alias:
                    bindings[alias] = f"import {module} as {alias}"
                else:  # import a.b binds a, as import a.c does
                    top = module.partition(".")[0]
                    bindings[top] = f"import {top}"
            else:
                _, module, name, alias = entry
                bindings[alias or name] = f"from {module} import {name}"
        return bindings


# A module's text is parsed, and walked for what it binds and imports, once in a process:
# the tests assemble the same modules again and again, a few changed, from copies of the
# package in other folders (so the text alone is the key).
def parsed(source, filename):
    """The module's tree (the build only reads it); a syntax error names the file."""
    try:
        return parsed_text(source)
    except SyntaxError:
        ast.parse(source, filename=filename)
        raise


@functools.lru_cache(maxsize=256)
def parsed_text(source):
    return ast.parse(source)


@functools.lru_cache(maxsize=256)
def nested_imports(tree):
    """The imports below the top level of a module's tree, in the order of ast.walk."""
    top = set(tree.body)
    return tuple(node for node in ast.walk(tree)
                 if node not in top and isinstance(node, (ast.Import, ast.ImportFrom)))


def is_string(statement):
    """Whether a statement is a lone string: a docstring where it comes first."""
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) \
        and isinstance(statement.value.value, str)


@functools.lru_cache(maxsize=256)
def defined_names(tree):
    """The names a module binds at its top level (imports aside), and those its functions
    declare global (a frozen set: the answer is kept for the tree)."""
    names = set()

    def bind(target):
        if isinstance(target, ast.Name):
            names.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                bind(element)
        elif isinstance(target, ast.Starred):
            bind(target.value)

    def visit(statements):
        for statement in statements:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(statement.name)
                continue  # what its body binds is its own
            if isinstance(statement, ast.Assign):
                for target in statement.targets:
                    bind(target)
            elif isinstance(statement, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
                bind(statement.target)
            elif isinstance(statement, (ast.With, ast.AsyncWith)):
                for item in statement.items:
                    bind(item.optional_vars)
            for field in ("body", "orelse", "finalbody"):  # if, for, while, with, try
                visit(getattr(statement, field, []))
            for handler in getattr(statement, "handlers", []):
                if handler.name:
                    names.add(handler.name)
                visit(handler.body)

    visit(tree.body)
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            names.update(node.names)
    return frozenset(names)


def import_time_names(tree):
    """The names a module reads when it is imported: its top-level code, its default
    arguments, decorators and base classes, and its class bodies; not its function bodies."""
    names = set()

    def read(node):
        if node is None:
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for part in (*node.decorator_list, *node.args.defaults, *node.args.kw_defaults):
                read(part)
        elif isinstance(node, ast.ClassDef):
            for part in (*node.decorator_list, *node.bases, *node.keywords, *node.body):
                read(part)
        elif isinstance(node, ast.Lambda):
            for part in (*node.args.defaults, *node.args.kw_defaults):
                read(part)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            names.add(node.id)
        else:
            for child in ast.iter_child_nodes(node):
                read(child)

    for statement in tree.body:
        read(statement)
    return names


def read_modules(package, modules):
    """The modules of ``package`` in ``modules``' order, parsed and checked one by one."""
    listed = [name for name, _ in modules]
    present = {path.stem for path in Path(package).glob("*.py")} - {"__init__"}
    unlisted = sorted(present - set(listed))
    if unlisted:
        raise BuildError(f"{', '.join(name + '.py' for name in unlisted)} in {package} "
                         f"is not in build.py's MODULES: list it, or it is left out of "
                         f"the served file")
    init = Path(package) / "__init__.py"
    if init.exists():
        tree = ast.parse(init.read_bytes().decode("utf-8"), filename=str(init))
        if not all(is_string(statement) for statement in tree.body):
            raise BuildError(f"{init} has code: the served file leaves it out, so keep it "
                             f"to a docstring")
    return [Module(name, title, Path(package) / f"{name}.py", set(listed))
            for name, title in modules]


def check_names(modules):
    """Refuse a name two modules define (or one defines and another imports from the
    standard library), a sibling import of a name its module does not define, and a name
    used at import time before its module comes in the served file."""
    owner, bound_by = {}, {}
    for module in modules:
        for name in sorted(module.defines):
            if name in owner:
                raise BuildError(f"{owner[name]}.py and {module.name}.py both define "
                                 f"{name}: in the served file one would replace the other")
            owner[name] = module.name
        for name, statement in module.import_bindings().items():
            if bound_by.setdefault(name, statement) != statement:
                raise BuildError(f"{module.name}.py binds {name} by `{statement}`, another "
                                 f"module by `{bound_by[name]}`: use one")
    clashes = sorted(set(owner) & set(bound_by))
    if clashes:
        name = clashes[0]
        raise BuildError(f"{owner[name]}.py defines {name}, which a module imports by "
                         f"`{bound_by[name]}`: rename one")
    position = {module.name: index for index, module in enumerate(modules)}
    for module in modules:
        for name, sibling in sorted(module.sibling_names.items()):
            if owner.get(name) != sibling:
                raise BuildError(f"{module.name}.py imports {name} from .{sibling}, which "
                                 f"does not define it")
        for name in sorted(import_time_names(module.tree) & set(module.sibling_names)):
            if position[owner[name]] > position[module.name]:
                raise BuildError(f"{module.name}.py uses {name} at import time, but "
                                 f"{owner[name]}.py comes after it in build.py's MODULES")


def member_key(name):
    """ruff's (isort's) order of imported names: CONSTANTS, then Classes, then the rest."""
    kind = 0 if len(name) > 1 and name.isupper() else 1 if name[:1].isupper() else 2
    return kind, name.lower(), name


def import_block(modules):
    """The standard-library imports of all modules: one sorted, deduplicated block."""
    imports = set().union(*(module.imports for module in modules))
    straight = sorted((entry for entry in imports if entry[0] == "import"),
                      key=lambda entry: (entry[1].lower(), entry[1], entry[2] or ""))
    lines = [f"import {module}" + (f" as {alias}" if alias else "")
             for _, module, alias in straight]
    for module in sorted({entry[1] for entry in imports if entry[0] == "from"},
                         key=lambda name: (name.lower(), name)):
        members = sorted((entry[2:] for entry in imports
                          if entry[0] == "from" and entry[1] == module),
                         key=lambda member: (*member_key(member[0]), member[1] or ""))
        # The plain names share a statement; a renamed one has its own, as ruff writes them.
        plain = [name for name, alias in members if not alias]
        statements = [[f"{name} as {alias}"] for name, alias in members if alias]
        statements = sorted(([plain] if plain else []) + statements,
                            key=lambda names: member_key(names[0].split()[0]))
        for names in statements:
            line = f"from {module} import {', '.join(names)}"
            if len(line) > LINE_LENGTH:
                wrapped = "".join(f"    {name},\n" for name in names)
                line = f"from {module} import (\n{wrapped})"
            lines.append(line)
    return "\n".join(lines)


def separator(module):
    head = f"# --- {module.name}.py: {module.title} "
    return head + "-" * max(3, SEPARATOR_WIDTH - len(head))


def assemble(package=None, modules=None):
    """The served file's text, assembled from ``package``'s ``modules`` (name, title pairs;
    by default PACKAGE's MODULES)."""
    parsed = read_modules(package or PACKAGE, modules or MODULES)
    check_names(parsed)
    first = parsed[0]
    if first.docstring is None:
        raise BuildError(f"{first.name}.py has no docstring: it is the served file's")
    start, end = first.docstring
    docstring = "\n".join(first.lines[start - 1:end])
    head = (f"{SHEBANG}\n{docstring}\n\nfrom __future__ import annotations\n\n"
            f"{import_block(parsed)}\n\n")
    bodies = [f"{separator(module)}\n\n\n{module.body()}" for module in parsed]
    return stamped(head + "\n\n\n".join(bodies) + "\n")


def stamped(text):
    """The assembly with its build's hash in place of core.py's placeholder."""
    if text.count(UNSTAMPED) != 1:
        raise BuildError(f"core.py must hold `{UNSTAMPED}` once: the build stamps it")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:STAMP_LENGTH]
    return text.replace(UNSTAMPED, f'SOURCE_HASH = "{digest}"')


def build_of(text):
    """The hash a built file was stamped with (None: not a stamped build)."""
    found = re.search(r'^SOURCE_HASH = "([0-9a-f]+)"$', text, re.MULTILINE)
    return found.group(1) if found else None


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="build.py", description="Assemble client/flakeboard_ci.py from client/src.")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when the file is not the assembly")
    args = parser.parse_args(argv)
    try:
        text = assemble()
    except BuildError as exc:
        print(f"build.py: {exc}", file=sys.stderr)
        return 2
    try:
        current = TARGET.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        current = None
    shown = TARGET.relative_to(HERE.parent).as_posix()
    if current == text:
        if not args.check:
            TARGET.touch()  # newer than its sources, as make reads it: no build next time
        print(f"{shown} is up to date")
        return 0
    if args.check:
        print(f"{shown} is not what client/build.py assembles from client/src: run "
              f"`make client` (python client/build.py)", file=sys.stderr)
        return 1
    # Written whole, then moved into place: a reader (another process building at once)
    # never sees half a file.
    partial = TARGET.with_name(f".{TARGET.name}.{os.getpid()}")
    with open(partial, "w", encoding="utf-8", newline="\n") as out:
        out.write(text)
    os.replace(partial, TARGET)
    print(f"wrote {shown}: {len(text.splitlines())} lines from {len(MODULES)} modules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
