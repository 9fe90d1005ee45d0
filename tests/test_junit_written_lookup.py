"""A JUnit file's testcases find the nodes the suite knows through the index of how pytest
writes them (``Node.written_key``): the nodes found are exactly those the full scan of
every known node, each written as pytest would, found before."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from junit.nodeids import pytest_nodeid, pytest_written
from junit.nodes import VOUCHED, nodes_for_cases
from junit.parse import Case
from ledger.models import Node, node_written_key
from ledger.nodes import nodes_create
from ledger.quarantine import quarantine_create
from tests.properties import db_property, rolled_back

MODULE = st.sampled_from(["tests", "test_a", "api.v2", "unit", "test_b"])
CLASS = st.sampled_from(["TestA", "TestB", "lower", "Test_c"])
FUNCTION = st.sampled_from(["test_x", "test_y", "test_z"])
PARAMS = st.one_of(st.none(), st.sampled_from(["1", "a::b", "x[y]", "a.b", ""]))


@st.composite
def nodeids(draw) -> str:
    """Ids of the shapes that write alike: dotted folders, lower-case classes, parameters
    holding ``::`` or brackets, modules and classes of the same name."""
    modules = draw(st.lists(MODULE, min_size=1, max_size=3))
    classes = draw(st.lists(CLASS, max_size=2))
    params = draw(PARAMS)
    function = draw(FUNCTION) + ("" if params is None else f"[{params}]")
    return "::".join(["/".join(modules) + ".py", *classes, function])


def full_scan(suite, cases: list[Case]) -> list[str]:
    """Each case's node id as the ingest chose it before the index: every vouched node of
    the suite written as pytest would, then the case's own id unless one fits."""
    fits = defaultdict(list)
    for nodeid in Node.objects.filter(VOUCHED, suite=suite).values_list("nodeid", flat=True):
        fits[pytest_written(nodeid)].append(nodeid)
    chosen = []
    for case in cases:
        found = sorted(fits.get(case.written, []))
        chosen.append(case.nodeid if not found or case.nodeid in found else found[0])
    return chosen


def case(position: int, nodeid: str) -> Case:
    classname, name = pytest_written(nodeid)
    return Case(position, pytest_nodeid(classname, name), (classname, name), ())


@db_property(60)
@given(vouched=st.lists(nodeids(), max_size=12, unique=True),
       guesses=st.lists(nodeids(), max_size=6, unique=True),
       elsewhere=st.lists(nodeids(), max_size=6, unique=True),
       named=st.lists(nodeids(), min_size=1, max_size=12))
def test_the_index_finds_what_the_full_scan_found(suite, other_suite, today, vouched,
                                                  guesses, elsewhere, named):
    """Vouched nodes (a gate upload named them), guesses (only a JUnit file did) and another
    suite's nodes; a file naming some of them and others as pytest writes them."""
    with rolled_back():
        nodes_create(suite, vouched, [], seen=today)
        nodes_create(suite, sorted(set(guesses) - set(vouched)), [])
        nodes_create(other_suite, elsewhere, [], seen=today)
        cases = [case(i, nodeid) for i, nodeid in enumerate(named + vouched[::2] + guesses)]
        expected = full_scan(suite, cases)
        found = [nodeid for _, nodeid in nodes_for_cases(suite, cases, "c0ffee")]
        assert found == expected


def test_a_node_with_an_entry_is_found_by_its_written_form(suite, today):
    """A node only quarantined by hand (no gate upload named it) is vouched for by its
    entry, and a testcase written as pytest writes it maps to it, not to the guess."""
    true = "tests/api.v2/test_users.py::TestUsers::test_create[a::b]"
    quarantine_create(suite=suite, nodeid=true, owner="@finley", evidence="ci/run-1",
                      expires=today + timedelta(days=5), actor="@finley", today=today,
                      imported=True)
    (pk, nodeid), = nodes_for_cases(suite, [case(0, true)], "c0ffee")
    assert nodeid == true and pk == Node.objects.get(suite=suite, nodeid=true).pk


def test_every_way_of_making_a_node_keeps_its_written_key(suite, today):
    nodes_create(suite, ["tests/test_a.py::TestA::test_x[1]"], [], seen=today)
    Node.objects.create(suite=suite, nodeid="tests/test_b.py::test_y")
    quarantine_create(suite=suite, nodeid="tests/test_c.py::test_z", owner="@finley",
                      evidence="ci/run-1", expires=today + timedelta(days=5), actor="@finley",
                      today=today, imported=True)
    kept = dict(Node.objects.filter(suite=suite).values_list("nodeid", "written_key"))
    assert len(kept) == 3
    assert kept == {nodeid: node_written_key(nodeid) for nodeid in kept}

