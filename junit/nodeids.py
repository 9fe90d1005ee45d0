"""Node ids from JUnit testcases: pure Python, no Django.

**pytest** writes a testcase's ``classname`` and ``name`` from its node id
(``_pytest/junitxml.py``, ``mangle_test_address``): the parameters are set aside, the id
is split on ``::``, the path's ``/`` become ``.`` and ``.py`` is dropped; the classes
follow the module, and the name keeps its parameters::

    tests/unit/test_x.py::TestY::test_z[a::b]
    → classname "tests.unit.test_x.TestY", name "test_z[a::b]"

``junit_family=xunit1`` also writes ``file="tests/unit/test_x.py"``; ``xunit2`` (the
default) does not. Back from a testcase to its node id, the first rule that applies:

1. a ``file`` attribute whose dotted form (``/`` and ``\\`` as ``.``, ``.py`` dropped) is
   the classname or begins it: the file, then the rest of the classname's parts as
   classes, then the name. Exact: the id, whatever the suite knows. (For a test
   inherited from a class in another module, pytest gives the base class's file: it does
   not fit, and the next rules apply.)
2. a node the suite knows from pytest itself (named by a gate upload or a quarantine
   entry) that pytest would write with this classname and name (``pytest_written``,
   in ``flakeboard.rules.written``: each node keeps its form's key, ``Node.written_key``);
3. otherwise the likely split of the classname into a module path and classes: the
   classes are the trailing parts that begin with a capital letter (pytest collects
   ``Test*`` classes), the module at least the first part, its dots made ``/``. A
   testcase with no classname (a module that failed to collect) is the module's path.

Rule 3 guesses wrong for a lower-case test class, a text doctest or a dotted directory
name (``tests/v1.2/``): ``file`` (rule 1) or a node the suite already knows (rule 2)
reads them right. A classname prefix (``--junitprefix``) is not taken off.

**Other producers** (Surefire, jest-junit, gotestsum, any JUnit writer) get a stable id
of the same shape: ``file::classname::name``, leaving out the file when there is none and
the classname when there is none or it only repeats the name (jest-junit's default);
with neither, the enclosing testsuite's name stands first.

Control characters, which the board refuses in a node id, are written escaped as pytest
escapes them (``\\n``, ``\\t``, ``\\x1b``).
"""

from __future__ import annotations

import re
from functools import cache, lru_cache

from flakeboard.rules.written import pytest_written

__all__ = ["escaped", "file_fits", "generic_nodeid", "pytest_nodeid", "pytest_written"]

SEPARATOR = "::"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NAMED_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def escaped(text: str) -> str:
    """``text`` with its control characters escaped as pytest writes them in a node id."""
    if text.isprintable():
        return text
    return _CONTROL.sub(lambda m: _NAMED_ESCAPES.get(m[0], f"\\x{ord(m[0]):02x}"), text)


@cache
def _dotted(path: str) -> str:
    return re.sub(r"\.py$", "", path.replace("\\", ".").replace("/", "."))


def _joined(*parts: str) -> str:
    return escaped(SEPARATOR.join(parts))


def file_fits(classname: str, file: str) -> bool:
    """Whether a testcase's ``file`` attribute tells its node id exactly (rule 1)."""
    return bool(file and classname) and (
        classname == _dotted(file) or classname.startswith(_dotted(file) + "."))


@lru_cache(maxsize=4096)
def _head(classname: str, file: str) -> str:
    """The node id's module and classes, the part a file's tests of one class share."""
    if file_fits(classname, file):
        classes = classname[len(_dotted(file)) + 1:]
        return _joined(file, *(classes.split(".") if classes else ()))
    parts = classname.split(".")
    modules = len(parts)
    while modules > 1 and parts[modules - 1][:1].isupper():
        modules -= 1
    return _joined("/".join(parts[:modules]) + ".py", *parts[modules:])


def pytest_nodeid(classname: str, name: str, file: str = "") -> str:
    """The node id pytest wrote as this testcase: exact when its ``file`` fits (rule 1),
    else the likely split of the classname (rule 3)."""
    if not classname:
        return _joined("/".join(name.split(".")) + ".py")
    return _head(classname, file.replace("\\", "/")) + SEPARATOR + escaped(name)


def generic_nodeid(classname: str, name: str, file: str = "", suite: str = "") -> str:
    """A stable id for another producer's testcase: ``file::classname::name``."""
    parts = [part for part in (file, classname if classname != name else "") if part]
    if not parts and suite:
        parts = [suite]
    return _joined(*parts, name)
