"""Database filters built from the rules' own definitions: a window of days becomes a
range lookup with the same inclusive edges, a tier threshold the same comparison. The
property tests hold each filter equal to its Python predicate."""

from __future__ import annotations

from datetime import date

from django.db.models import Exists, OuterRef, Q, QuerySet

from flakeboard import rules


def window_q(field: str, window: rules.DayWindow, today: date) -> Q:
    """``field`` falls in the window: both edges included, as DayWindow.contains has it."""
    first, last = window.bounds(today)
    q = Q()
    if first is not None:
        q &= Q(**{f"{field}__gte": first})
    if last is not None:
        q &= Q(**{f"{field}__lte": last})
    return q


def quarantinable_q(tier_field: str = "node__tier") -> Q:
    return Q(**{f"{tier_field}__gte": rules.MIN_QUARANTINABLE_TIER})


# An entry's filters read its node's tier through the join (``node__tier``), or through
# ``tier_field``: an annotation of the tier (``ledger.selectors.with_node_tier``) that a
# count of a whole suite's entries reads a node at a time.


def for_gate_q(tier_field: str = "node__tier") -> Q:
    """Open entries the gate reads: their node's tier may be quarantined."""
    return OPEN & quarantinable_q(tier_field)


def violating_q(tier_field: str = "node__tier") -> Q:
    """Open entries whose node's tier may never be quarantined."""
    return OPEN & ~quarantinable_q(tier_field)


OPEN = Q(cleared_at__isnull=True)
CLEARED = Q(cleared_at__isnull=False)
FOR_GATE = for_gate_q()
VIOLATING = violating_q()
READY_TO_CLEAR = OPEN & Q(ready_to_clear=True)


def entry_state_q(state: rules.EntryState, today: date, tier_field: str = "node__tier") -> Q:
    """Entries in ``state`` today, as rules.entry_state decides it."""
    match state:
        case rules.EntryState.CLEARED:
            return CLEARED
        case rules.EntryState.TIER_VIOLATION:
            return violating_q(tier_field)
    return for_gate_q(tier_field) & window_q("expires", rules.STATE_WINDOWS[state], today)


def live_entry_q(today: date, tier_field: str = "node__tier") -> Q:
    """Entries that freeze their node and count toward the share (rules.entry_is_live)."""
    return for_gate_q(tier_field) & window_q("expires", rules.LIVE, today)


def ci_run_q(today: date, branch: str) -> Q:
    """CI runs that may size the test set (rules.sizing_run's input): the branch's, with a
    file within the window."""
    return Q(branch=branch) & window_q("last_day", rules.CI_RUN_WINDOW, today)


def seen_node_q(today: date) -> Q:
    """Nodes seen in an upload within the window: the first way into the test set."""
    return window_q("last_seen", rules.KNOWN_NODE_WINDOW, today)


def held_node_q(entries: QuerySet) -> Q:
    """Nodes holding an open entry among ``entries`` (the caller's
    ``QuarantineEntry.objects``: this module builds filters and imports no model): the
    second way into the test set."""
    return Q(Exists(entries.filter(OPEN, node=OuterRef("pk"))))


def known_node_q(today: date, entries: QuerySet) -> Q:
    """Nodes in the test set (rules.node_is_known): seen within the window, or holding an
    open entry among ``entries``."""
    return seen_node_q(today) | held_node_q(entries)
