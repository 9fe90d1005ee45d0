"""What a patch's gate measures (SPEC 2.4c): the failed, the new, the changed file's, the
flaky-prone tier-2 nodes and those that execute a changed source file, in that order,
started while the budget lasts; the rest ran once and are left to the nightly measure. The
CI client applies this module itself (test_client_build.py holds the build to it)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakeboard.rules import (
    EVERY_NODE,
    GATE_PLAN_GROUPS,
    MEASURE_BUDGET_SECONDS,
    MEASURED_BECAUSE,
    RUN_OVERHEAD_SECONDS,
    PlanCandidate,
    gate_plan,
    in_changed_file,
    plan_group,
)
from tests.ci_client_view import load_client
from tests.properties import PROPERTY

client = load_client()


def node(name, seconds=1.0, runs=10, **facts):
    return PlanCandidate(f"tests/test_{name}", seconds, runs, **facts)


SELECTION = [
    node("plain.py::a"),
    node("flaky.py::t", flaky=True),
    node("edited.py::a", changed_file=True),
    node("new.py::t", runs=30, new=True),
    node("edited.py::b", changed_file=True, flaky=True),
    node("broken.py::t", failed=True, changed_file=True),
    node("plain.py::b"),
    node("covered.py::t", executes_changed="src/x.py"),
]


@pytest.mark.parametrize(("budget", "measured", "over", "nightly"), [
    # No budget: every grouped node, in priority order (the run's order within a group).
    (None, [("broken.py::t", "failed"), ("new.py::t", "new"),
            ("edited.py::a", "changed_file"), ("edited.py::b", "changed_file"),
            ("flaky.py::t", "flaky"), ("covered.py::t", "executes_changed")], [], 2),
    # Each node costs its runs x (its seconds + a run's overhead): about 10 s, the new one
    # about 30 s. The first node that
    # starts over the budget is measured; the rest are named as left out, in order.
    (15, [("broken.py::t", "failed"), ("new.py::t", "new")],
     [("edited.py::a", "changed_file"), ("edited.py::b", "changed_file"),
      ("flaky.py::t", "flaky"), ("covered.py::t", "executes_changed")], 6),
    (45, [("broken.py::t", "failed"), ("new.py::t", "new"), ("edited.py::a", "changed_file")],
     [("edited.py::b", "changed_file"), ("flaky.py::t", "flaky"),
      ("covered.py::t", "executes_changed")], 5),
    (0, [], [("broken.py::t", "failed"), ("new.py::t", "new"),
             ("edited.py::a", "changed_file"), ("edited.py::b", "changed_file"),
             ("flaky.py::t", "flaky"), ("covered.py::t", "executes_changed")], 8),
])
def test_the_groups_in_priority_order_within_the_budget(budget, measured, over, nightly):
    plan = gate_plan(SELECTION, budget)
    assert [(p.node.removeprefix("tests/test_"), p.group) for p in plan.measured] == measured
    assert [(p.node.removeprefix("tests/test_"), p.group) for p in plan.over_budget] == over
    assert plan.left_to_nightly == nightly


def test_a_group_cut_short_is_named():
    plan = gate_plan(SELECTION, 45)
    assert plan.cut_groups == ("changed_file", "flaky", "executes_changed")
    assert plan.cost == pytest.approx(5 * (1 + RUN_OVERHEAD_SECONDS) * 10)
    assert [p.why for p in plan.measured] == ["failed in this run", "new", "test file changed"]


def test_the_workers_share_the_runs_so_the_budget_is_wall_time():
    # Two workers run a node's blocks side by side: each node costs half, so twice the
    # nodes fit the same budget.
    alone = gate_plan(SELECTION, 30)
    assert [p.node.removeprefix("tests/test_") for p in alone.measured] == [
        "broken.py::t", "new.py::t"]
    plan = gate_plan(SELECTION, 30, workers=2)
    assert [p.node.removeprefix("tests/test_") for p in plan.measured] == [
        "broken.py::t", "new.py::t", "edited.py::a", "edited.py::b"]
    assert plan.cost == pytest.approx(6 * (1 + RUN_OVERHEAD_SECONDS) * 10 / 2)
    assert gate_plan(SELECTION, None, workers=4).cost == pytest.approx(
        gate_plan(SELECTION, None).cost / 4)


def test_a_node_that_executes_a_changed_file_says_which():
    plan = gate_plan(SELECTION, None)
    assert plan.measured[-1].why == "runs the changed src/x.py"
    assert MEASURED_BECAUSE["executes_changed"] == "runs a changed file"
    assert [p.path for p in plan.measured] == ["", "", "", "", "", "src/x.py"]


def test_every_node_measures_the_ungrouped_last_and_no_budget_cuts_it():
    plan = gate_plan(SELECTION, None, every_node=True)
    assert [p.group for p in plan.measured][-2:] == [EVERY_NODE, EVERY_NODE]
    assert plan.measured[-1].why == "tier 2 (--measure all)"
    assert plan.left_to_nightly == 0


@pytest.mark.parametrize(("facts", "group"), [
    ({}, None), ({"flaky": True}, "flaky"), ({"changed_file": True, "flaky": True},
                                             "changed_file"),
    ({"new": True, "changed_file": True}, "new"), ({"failed": True, "new": True}, "failed"),
    ({"executes_changed": "src/x.py"}, "executes_changed"),
    ({"flaky": True, "executes_changed": "src/x.py"}, "flaky"),
])
def test_a_node_is_in_its_first_group(facts, group):
    assert plan_group(node("x.py::t", **facts)) == group


@pytest.mark.parametrize(("nodeid", "changed", "inside"), [
    ("tests/test_x.py::t", ["tests/test_x.py"], True),
    ("tests/test_x.py::C::t[1]", ["src/x.py", "tests/test_x.py"], True),
    ("tests/test_x.py::t", ["pkg/tests/test_x.py"], True),  # git's root above pytest's
    ("pkg/tests/test_x.py::t", ["tests/test_x.py"], True),
    ("tests/test_x.py::t", ["tests/test_xy.py", "test_x.py.orig"], False),
    ("tests/test_x.py::t", ["other_tests/test_x.py"], False),
    ("tests/test_x.py::t", [], False),
])
def test_a_node_is_in_a_changed_file(nodeid, changed, inside):
    assert in_changed_file(nodeid, changed) is inside


candidates = st.lists(st.builds(
    PlanCandidate, node=st.text(min_size=1, max_size=5),
    seconds=st.floats(min_value=0, max_value=100), runs=st.integers(min_value=1, max_value=400),
    failed=st.booleans(), new=st.booleans(), changed_file=st.booleans(), flaky=st.booleans(),
    executes_changed=st.sampled_from(["", "src/x.py", "pkg/y.py"]),
), max_size=30)
budgets = st.none() | st.floats(min_value=0, max_value=10_000)


def priority_order(selection):
    grouped = [(GATE_PLAN_GROUPS.index(plan_group(c)), i, c) for i, c in enumerate(selection)
               if plan_group(c)]
    return [c.node for _, _, c in sorted(grouped, key=lambda item: item[:2])]


@PROPERTY
@given(candidates, budgets)
def test_the_measured_are_a_prefix_of_the_priority_order_and_exceed_by_one_node(
        selection, budget):
    plan = gate_plan(selection, budget)
    order = priority_order(selection)
    measured = [p.node for p in plan.measured]
    assert measured + [p.node for p in plan.over_budget] == order
    if budget is not None and plan.measured:
        # Every node but the last started under the budget.
        assert sum(p.cost for p in plan.measured[:-1]) < budget
    if plan.over_budget:
        assert plan.cost >= budget
    assert plan.left_to_nightly == len(selection) - len(measured)
    for planned in plan.measured + plan.over_budget:
        if planned.group == "executes_changed":
            assert planned.why in {f"runs the changed {c.executes_changed}" for c in selection
                                   if c.node == planned.node and c.executes_changed}


def as_tuples(plan):
    return ([(p.node, p.group, p.runs, p.cost, p.why, p.path) for p in plan.measured],
            [(p.node, p.group, p.runs, p.cost) for p in plan.over_budget],
            plan.left_to_nightly, plan.cut_groups)


@pytest.mark.parametrize("budget", [None, 0, 15, 45, 1000])
@pytest.mark.parametrize("every_node", [False, True])
def test_the_clients_copy_is_held_equal_to_the_rule(budget, every_node):
    """The built client plans as the board: its build takes this rule's module as it is."""
    copies = [client.PlanCandidate(c.node, c.seconds, c.runs, c.failed, c.new, c.changed_file,
                                   c.flaky, c.executes_changed) for c in SELECTION]
    for workers in (1, 2):
        assert as_tuples(client.gate_plan(copies, budget, every_node, workers)) == \
            as_tuples(gate_plan(SELECTION, budget, every_node, workers))
    assert client.MEASURED_BECAUSE == MEASURED_BECAUSE
    assert client.MEASURE_BUDGET_SECONDS == MEASURE_BUDGET_SECONDS
    assert client.RUN_OVERHEAD_SECONDS == RUN_OVERHEAD_SECONDS
    for nodeid, changed in [("tests/test_x.py::t", ["pkg/tests/test_x.py"]),
                            ("tests/test_x.py::t", ["tests/test_xy.py"])]:
        assert client.in_changed_file(nodeid, changed) == in_changed_file(nodeid, changed)


@pytest.mark.parametrize(("argv", "words"), [
    (["--measure", "tests/"], ["--measure=patch", "tests/"]),  # the selection stays pytest's
    (["tests/", "--measure", "all", "-x"], ["tests/", "--measure=all", "-x"]),
    (["--measure"], ["--measure=patch"]),
    (["--measure", "all", "--", "--measure", "all"], ["--measure=all", "--", "--measure", "all"]),
])
def test_the_measure_word_is_all_or_nothing(argv, words):
    assert client.measure_words(argv) == words
