"""How pytest writes a node id in JUnit XML, as a testcase's ``classname`` and ``name``
(``_pytest/junitxml.py``, ``mangle_test_address``): the form under which a JUnit file's
testcase finds a node the suite knows (``junit.nodeids``, rule 2). Each node keeps the key
of this form in an indexed column (``Node.written_key``), so that an upload reads only
the nodes its own testcases could be."""

from __future__ import annotations

import re


def pytest_written(nodeid: str) -> tuple[str, str]:
    """(classname, name) as pytest writes a node id in JUnit XML: pytest 9's
    ``mangle_test_address`` (the parameters set aside before the id is split on ``::``,
    the path dotted, ``.py`` dropped)."""
    path, separator, tail = nodeid.partition("::")
    names = [path]
    if separator:
        name_part, bracket, params = tail.partition("[")
        names += name_part.split("::")
        if bracket:
            names[-1] += f"[{params.removesuffix(']')}]"
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    return ".".join(names[:-1]), names[-1]


def written_text(classname: str, name: str) -> str:
    """One text for a written form, which its key is taken of: neither part holds a NUL
    (a node id holds no control character, and XML no NUL)."""
    return f"{classname}\0{name}"
