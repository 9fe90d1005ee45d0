"""Each gate predicate is written once, in the rules; the database filters are built from
the same definitions. These properties hold the two equal on random ledgers: for any
entries, tiers, sightings and ``today``, the SQL picks exactly the rows the Python
predicate picks, and the SQL share is the Python share."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakeboard import rules
from ledger.models import Node, QuarantineEntry, Suite
from ledger.selectors import OPEN_STATES, entry_counts, known_nodes, share_figures
from tests.properties import db_property, rolled_back

SQL_PROPERTY = db_property(80)
pytestmark = pytest.mark.django_db
# Offsets reach past every window's edge on both sides, and land on the edges often: the
# 7-day expiring window, the 30-day known-node window, and expiry today.
EDGES = st.sampled_from([-31, -30, -29, -1, 0, 1, 6, 7, 8])
EXPIRY = EDGES | st.integers(-40, 40)
SIGHTING = st.none() | EDGES | st.integers(-40, 2)
DAYS = st.dates(date(2001, 1, 1), date(2099, 1, 1))

NODES = st.lists(
    st.tuples(
        st.sampled_from([rules.Tier.REPEAT_BUDGET, *rules.Tier.ALL]),  # mostly quarantinable
        SIGHTING,  # last seen, days from today (None: never in an upload)
        st.none() | st.tuples(EXPIRY, st.booleans(), st.booleans()),  # expiry, cleared, ready
    ),
    max_size=20,
)


@contextmanager
def random_ledger(today: date, nodes) -> Iterator[Suite]:
    """A suite holding ``nodes``, for one example: rolled back when the example ends."""
    with rolled_back():
        yield _ledger(today, nodes)


def _ledger(today: date, nodes) -> Suite:
    suite = Suite.objects.create(slug="props", max_quarantined_share=0.25)
    noon = datetime.combine(today, datetime.min.time(), tzinfo=UTC)
    for i, (tier, seen, entry) in enumerate(nodes):
        last = None if seen is None else today + timedelta(days=seen)
        node = Node.objects.create(
            suite=suite, nodeid=f"tests/t.py::n{i}", tier=tier,
            first_seen=last, last_seen=last,
        )
        if entry is not None:
            expires, cleared, ready = entry
            QuarantineEntry.objects.create(
                suite=suite, node=node, owner="@o", evidence="ci/1",
                expires=today + timedelta(days=expires), created_at=noon, created_by="@o",
                updated_at=noon, cleared_at=noon if cleared else None, ready_to_clear=ready,
            )
    return suite


def _python_states(suite: Suite, today: date) -> dict[int, rules.EntryState]:
    entries = QuarantineEntry.objects.filter(suite=suite).select_related("node")
    return {e.pk: e.state(today) for e in entries}


@SQL_PROPERTY
@given(today=DAYS, nodes=NODES)
def test_state_filters_pick_exactly_the_entries_in_that_state(today, nodes):
    with random_ledger(today, nodes) as suite:
        python = _python_states(suite, today)
        entries = QuarantineEntry.objects.filter(suite=suite)
        for state in rules.EntryState:
            sql = set(entries.in_state(state, today).values_list("pk", flat=True))
            assert sql == {pk for pk, s in python.items() if s is state}, state
        counts = entry_counts(suite, today)
        tally = Counter(python.values())
        ready = entries.filter(cleared_at__isnull=True, ready_to_clear=True).count()
        assert counts == {**{state.value: tally[state] for state in OPEN_STATES},
                          "ready_to_clear": ready}


@SQL_PROPERTY
@given(today=DAYS, nodes=NODES)
def test_live_entries_and_known_nodes_match_their_predicates(today, nodes):
    with random_ledger(today, nodes) as suite:
        entries = list(QuarantineEntry.objects.filter(suite=suite).select_related("node"))
        live = {
            e.pk for e in entries if e.cleared_at is None and rules.entry_is_live(e.facts, today)
        }
        sql_live = QuarantineEntry.objects.filter(suite=suite).live(today)
        assert set(sql_live.values_list("pk", flat=True)) == live

        holding = {e.node_id for e in entries if e.cleared_at is None}
        known = {
            n.pk for n in Node.objects.filter(suite=suite)
            if rules.node_is_known(n.last_seen, today, has_open_entry=n.pk in holding)
        }
        assert set(known_nodes(suite, today).values_list("pk", flat=True)) == known

        figures = share_figures(suite, today)
        expected = rules.ShareFigures(len(live), len(known), suite.max_quarantined_share)
        assert figures == expected
        assert figures.over_cap is rules.share_over_cap(len(live), len(known), 0.25)


# --- the edges, as tables: each breaks if a window or a comparison moves by one ----------

TODAY = date(2026, 10, 15)


@pytest.mark.parametrize(
    ("expires_in", "state"),
    [
        (-1, rules.EntryState.EXPIRED),
        (0, rules.EntryState.EXPIRING),  # expiring today: still live today
        (7, rules.EntryState.EXPIRING),
        (8, rules.EntryState.ACTIVE),
    ],
)
def test_state_edges_in_python_and_sql(db, expires_in, state):
    suite = _ledger(TODAY, [(2, 0, (expires_in, False, False))])
    assert _python_states(suite, TODAY) == {QuarantineEntry.objects.get().pk: state}
    assert QuarantineEntry.objects.in_state(state, TODAY).count() == 1


@pytest.mark.parametrize(
    ("seen", "known"),
    [(0, True), (-30, True), (-31, False), (None, False)],
)
def test_known_node_window_edges_in_python_and_sql(db, seen, known):
    suite = _ledger(TODAY, [(2, seen, None)])
    last = None if seen is None else TODAY + timedelta(days=seen)
    assert rules.node_is_known(last, TODAY, has_open_entry=False) is known
    assert known_nodes(suite, TODAY).exists() is known
