"""The order the shared world's tests run in (tests/world.py): a module's tests that ask for
the world next to each other, each side in its shuffled order, and nothing moved across a
module or across pytest-django's line between transactional tests and the others; and the
clock of each test on the world, which is the world's."""

from types import SimpleNamespace

import pytest
from django.utils import timezone

from ledger.models import Suite
from tests.world import pytest_collection_modifyitems


def item(nodeid, world=False, transaction=False):
    marker = SimpleNamespace(kwargs={"transaction": True}) if transaction else None
    return SimpleNamespace(nodeid=nodeid, fixturenames=["db", "world"] if world else ["db"],
                           get_closest_marker=lambda name: marker)


def test_a_modules_world_tests_run_next_to_each_other_in_their_order():
    items = [item("a.py::w1", world=True), item("a.py::o1"), item("a.py::w2", world=True),
             item("a.py::o2"), item("a.py::w3", world=True),
             item("b.py::o1"), item("b.py::w1", world=True),
             item("a.py::w4", world=True),  # a's again, after b's: a stretch of its own
             item("c.py::w1", world=True), item("c.py::t1", transaction=True),
             item("c.py::w2", world=True)]
    pytest_collection_modifyitems(items)
    assert [i.nodeid for i in items] == [
        "a.py::w1", "a.py::w2", "a.py::w3", "a.py::o1", "a.py::o2",
        "b.py::w1", "b.py::o1",
        "a.py::w4",
        "c.py::w1", "c.py::t1", "c.py::w2",
    ]


@pytest.mark.parametrize("test", ["first", "second"])
def test_each_test_on_the_world_runs_on_the_clock_of_its_build(world, _world_run, test):
    """The clock looks up the world's instant (tests/clock.py) in each test of the world's
    run, the first, which builds it, and the next, and the world's rows are there."""
    assert timezone.now() == _world_run.instant and world.today == timezone.now().date()
    assert Suite.objects.filter(pk=world.suite.pk).exists()
