"""The two triggers that open an issue tied to a test rather than an entry, each a switch
of the suite's tracker (off by default): a test's first flaky evidence in CI (a JUnit flip
or a flip between gate attempts), and a new test flaky at birth. The board knows that
evidence (it sees both CI's JUnit and the new-test guard's measurements) and registers a
``Trigger`` for each when Django starts: trackers imports nothing above it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

from ledger.models import Node, Suite

from .models import Tracker, TrackerJob

Action = TrackerJob.Action


@dataclass(frozen=True)
class Trigger:
    # The ids of the suite's nodes whose first evidence of this kind is on or after
    # ``since`` (the day the switch was turned on), up to ``today``.
    firsts: Callable[[Suite, date, date], list[int]]
    # The evidence, as lines of the body: rates, runs, commit, links.
    evidence: Callable[[Suite, Node, date], list[str]]


# Each job action's switch, and the field holding the day it was turned on.
SWITCHES = {Action.CI_FLAKY: ("on_ci_flaky", "ci_flaky_since"),
            Action.BORN_FLAKY: ("on_born_flaky", "born_flaky_since")}
TRIGGERS: dict[str, Trigger] = {}


def test_key(node_id: int) -> str:
    """One issue per test, whichever trigger asks for it first."""
    return f"flaky:node:{node_id}"


def turned_flaky(tracker: Tracker, today: date) -> list[tuple[str, int]]:
    """(action, node id) of each test a switched-on trigger finds, first trigger first."""
    found: dict[int, str] = {}
    for action, (switch, since_field) in SWITCHES.items():
        since = getattr(tracker, since_field)
        if getattr(tracker, switch) and since is not None and action in TRIGGERS:
            for node_id in TRIGGERS[action].firsts(tracker.suite, since, today):
                found.setdefault(node_id, action)
    return [(action, node_id) for node_id, action in found.items()]
