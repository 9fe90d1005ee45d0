#!/usr/bin/env python3
"""Assemble client/flakeboard_ci.py, the one file the board serves (and pytest workers load
as a plugin), from the modules of client/src/flakeboard_ci/ and the board's pure rules the
client applies too (SHARED_RULES, taken from flakeboard/rules/: one place per rule).

The modules are kept apart so that each can be read, linted and edited alone; CI must get
one file with nothing to install. So the build writes the shebang and core's docstring,
one block of every module's standard-library imports, then each module's body, in MODULES'
order, without its docstring and imports: in one file the sibling imports are not needed.
It refuses a module that imports anything but the standard library and its siblings, two
modules that define one name, and a module that uses a later module's name at import time
(the checks: client/build_checks.py).

    python client/build.py          # writes client/flakeboard_ci.py (make client)
    python client/build.py --check  # exit 1 when client/flakeboard_ci.py is not the assembly

The assembly carries its build: ``SOURCE_HASH``, a hash of the file as assembled before
the stamp, so any change under src changes it. ``--version`` prints it, the client sends
it with every request, and the board serves it as the file's ETag.

Python 3.8+ and the standard library only, as the client itself.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # loaded by its path (the board, the tests): its checks beside it
    sys.path.insert(0, str(HERE))

from build_checks import BuildError, check_names, read_modules  # noqa: E402

PACKAGE = HERE / "src" / "flakeboard_ci"
# The board's pure rules the client applies as the board does: the build takes each module
# from flakeboard/rules/ as it is, so each is standard library only and runs on Python 3.8
# (the build's checks refuse one that is not). The modules import them as siblings.
RULES = HERE.parent / "flakeboard" / "rules"
SHARED_RULES = ("signatures", "failure_labels", "gate_plan")
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
    ("measure_procs", "measure's pytest processes as its pool sees them"),
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
    ("signatures", "a failure's signature, as the board signs a JUnit failure"),
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


def shared_rules():
    """Each shared rule's module file, by its name in MODULES."""
    return {name: RULES / f"{name}.py" for name in SHARED_RULES}


def sources():
    """Every file the assembly is made of: this one, its checks and the modules."""
    shared = shared_rules()
    return [HERE / "build.py", HERE / "build_checks.py",
            *(shared.get(module, PACKAGE / f"{module}.py") for module, _ in MODULES)]


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
    parsed = read_modules(package or PACKAGE, modules or MODULES, shared_rules())
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
