"""The build's checks of client/src/flakeboard_ci (client/build.py assembles what they
pass): each module parsed, what it imports and defines; a module that imports anything but
the standard library and its siblings, two modules that define one name, and a module that
uses a later module's name at import time are refused, each with a BuildError that says
which and why.

Python 3.8+ and the standard library only, as the client itself.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import os
import sys
import sysconfig
from pathlib import Path


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


def read_modules(package, modules, shared=None):
    """The modules of ``package`` in ``modules``' order, parsed and checked one by one;
    ``shared`` maps a module's name to its file where it is not in the package (a rule of
    the board's, taken as it is)."""
    shared = shared or {}
    listed = [name for name, _ in modules]
    present = {path.stem for path in Path(package).glob("*.py")} - {"__init__"}
    unlisted = sorted(present - set(listed))
    if unlisted:
        raise BuildError(f"{', '.join(name + '.py' for name in unlisted)} in {package} "
                         f"is not in build.py's MODULES: list it, or it is left out of "
                         f"the served file")
    copies = sorted(present & set(shared))
    if copies:
        raise BuildError(f"{', '.join(name + '.py' for name in copies)} in {package} "
                         f"copies {shared[copies[0]]}, which the build takes as it is: "
                         f"delete the copy")
    init = Path(package) / "__init__.py"
    if init.exists():
        tree = ast.parse(init.read_bytes().decode("utf-8"), filename=str(init))
        if not all(is_string(statement) for statement in tree.body):
            raise BuildError(f"{init} has code: the served file leaves it out, so keep it "
                             f"to a docstring")
    return [Module(name, title, Path(shared.get(name, Path(package) / f"{name}.py")),
                   set(listed))
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
