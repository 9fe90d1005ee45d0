"""Reads of the ledger: the served gate ledger, the quarantined share, entry facts."""

from __future__ import annotations

from datetime import date

from django.db.models import Count, Func, IntegerField, OuterRef, Subquery

from flakeboard import rules

from . import predicates
from .models import GATE_FIELDS, CiRun, Node, QuarantineEntry, Suite, gate_entry

ID_CHUNK = 500


def tier_rule_specs(suite: Suite) -> list[rules.TierRuleSpec]:
    pairs = suite.tier_rules.values_list("glob", "tier")
    return [rules.TierRuleSpec(glob, tier) for glob, tier in pairs]


def tier_resolution(suite: Suite, nodeid: str) -> rules.TierResolution:
    return rules.resolve_tier(nodeid, tier_rule_specs(suite))


def tiers_and_births(suite: Suite, nodeids: list[str]) -> tuple[
        list[rules.TierResolution], list[str | None]]:
    """Each node id's tier by the suite's rules (and only by them: a tier an upload stated
    decides nothing), and its first evidence commit (None for an unknown node, or one with
    no evidence yet: what ``rules.is_new`` reads), in the order given. Reads only: an
    unknown id is not stored for having been asked about."""
    specs = tier_rule_specs(suite)
    known: dict[str, str | None] = {}
    wanted = sorted(set(nodeids))
    for start in range(0, len(wanted), ID_CHUNK):
        found = Node.objects.filter(suite=suite).named(*wanted[start : start + ID_CHUNK])
        known.update(found.values_list("nodeid", "first_commit"))
    return ([rules.resolve_tier(nodeid, specs) for nodeid in nodeids],
            [known.get(nodeid) for nodeid in nodeids])


def violation_facts(nodeid: str, tier: int, specs: list[rules.TierRuleSpec]) -> dict:
    """Why an entry is a tier violation: the node's tier now and the glob of the rule that
    made it so. Both None when the node is quarantinable again (a rule removed since the
    answer was first made)."""
    if rules.quarantinable(tier):
        return {"tier": None, "tier_rule": None}
    resolution = rules.resolve_tier(nodeid, specs)
    return {"tier": tier, "tier_rule": resolution.rule.glob if resolution.rule else None}


def explain_violations(suite: Suite, entries: list[dict]) -> None:
    """Fill in ``tier`` and ``tier_rule`` (violation_facts) of the upload answers' entries
    that are tier violations, in one read for the lot."""
    violating = {entry["id"]: entry for entry in entries
                 if entry["state"] == rules.EntryState.TIER_VIOLATION}
    if not violating:
        return
    specs = tier_rule_specs(suite)
    ids = sorted(violating)
    for start in range(0, len(ids), ID_CHUNK):
        nodes = QuarantineEntry.objects.filter(pk__in=ids[start : start + ID_CHUNK]).values_list(
            "pk", "node__nodeid", "node__tier"
        )
        for pk, nodeid, tier in nodes:
            violating[pk].update(violation_facts(nodeid, tier, specs))


def known_nodes(suite: Suite, today: date):
    """The suite's test set: nodes seen in an upload within the window, or holding an open
    entry (rules.node_is_known)."""
    known = predicates.known_node_q(today, QuarantineEntry.objects)
    return Node.objects.filter(suite=suite).filter(known)


def ci_sizing_run(suite: Suite, today: date) -> rules.CiRunFacts | None:
    """CI's run that sizes the suite's test set today (rules.sizing_run_on, the one rule the
    share chart's days use too), if any; the query reads only the runs the rule can take."""
    recent = CiRun.objects.filter(predicates.ci_run_q(today, suite.default_branch),
                                  suite=suite).order_by("-first_at", "-pk")
    runs = [run.facts for run in recent.defer("members")[: rules.CI_RUNS_READ]]
    return rules.sizing_run_on(today, runs)


def share_figures(
    suite: Suite,
    today: date,
    *,
    joining: int = 0,
) -> rules.ShareFigures:
    """The quarantined share of the test set (SPEC 2.2 as docs/test-set.md amends it), the
    one computation every path uses: CI's last complete run on the default branch; else the
    known nodes. Always the board's own figure: a number a report states (its
    ``selected_total``) is stored beside it and never decides, since any write token could
    state one that moves the cap either way.

    ``joining`` counts the nodes an upload or a new entry is about to bring into the known
    nodes (nodes it names that are not known yet): they belong to them from that moment.
    """
    # Each filter in one step: every upload and every new entry reads the share, and a
    # step more is a copy more of the query.
    live = with_node_tier(QuarantineEntry.objects.filter(suite=suite)).filter(
        predicates.live_entry_q(today, NODE_TIER))
    cap = suite.max_quarantined_share
    if run := ci_sizing_run(suite, today):
        return rules.ShareFigures(live.count(), run.tests, cap, rules.SizeSource.CI_RUN, run)
    # The counts in one query: every path reads the share in two. The known nodes
    # (predicates.known_node_q) are counted in two parts that do not overlap, the seen
    # ones and the unseen ones an entry holds: each part reads an index of the suite's
    # nodes, where one count of the whole "or" read every node's row (B10's overview).
    nodes = Node.objects.filter(suite=suite)
    seen_q = predicates.seen_node_q(today)
    held = nodes.exclude(seen_q).filter(predicates.held_node_q(QuarantineEntry.objects))
    quarantined, seen, held = Suite.objects.filter(pk=suite.pk).order_by().values_list(
        _count(live), _count(nodes.filter(seen_q)), _count(held)).get()
    return rules.ShareFigures(quarantined, seen + held + joining, cap,
                              rules.SizeSource.KNOWN_NODES)


NODE_TIER = "node_tier"


def with_node_tier(entries):
    """``entries`` with their node's tier as NODE_TIER, for the predicates' ``tier_field``:
    read a node at a time by its key. A count of a suite's entries joined to the nodes
    instead, and PostgreSQL merged the join by walking the node table's key from its start
    to the suite's last entry (tens of thousands of rows for a thousand entries: 10 to 20
    ms of the overview's, and of every upload's share)."""
    return entries.alias(**{NODE_TIER: Subquery(
        Node.objects.filter(pk=OuterRef("node_id")).values("tier"))})


def _count(queryset) -> Subquery:
    """A queryset's row count as a subquery, for a query that reads several counts: a
    plain COUNT, which answers 0 for no rows, with no grouping to build (and no order,
    which PostgreSQL would take for one). ``COUNT(*)`` reads no column, so an index that
    holds the filter's columns answers it alone (the seen nodes: their suite and day)."""
    return Subquery(queryset.order_by().values(
        counted=Func(template="COUNT(*)", output_field=IntegerField())))


def open_entries_by_node(suite: Suite, node_ids=None) -> dict[int, QuarantineEntry]:
    """Open entries keyed by node pk, with their node (and so their tier) loaded."""
    entries = QuarantineEntry.objects.filter(suite=suite).open().select_related("node")
    if node_ids is None:
        return {entry.node_id: entry for entry in entries}
    if len(node_ids) > ID_CHUNK:
        # Many nodes (a whole upload's): the suite's open entries, at most one per node and
        # held to a share of them, in one read, rather than a parameter per node.
        wanted = set(node_ids)
        return {entry.node_id: entry for entry in entries if entry.node_id in wanted}
    found = {}
    node_ids = sorted(node_ids)
    # In chunks: one IN list of a whole upload's nodes passes SQLite's variable limit.
    for start in range(0, len(node_ids), ID_CHUNK):
        chunk = entries.filter(node_id__in=node_ids[start : start + ID_CHUNK])
        found.update((entry.node_id, entry) for entry in chunk)
    return found


def ledger_for_gate(suite: Suite) -> dict[str, dict]:
    """The served ledger, in exactly the flake_ledger.json shape (SPEC 3.3), read as plain
    values rather than an entry and a node object per row."""
    rows = (
        QuarantineEntry.objects.filter(suite=suite)
        .for_gate()
        .order_by("node__nodeid")
        .values_list("node__nodeid", *GATE_FIELDS)
    )
    return {nodeid: gate_entry(*values) for nodeid, *values in rows}


OPEN_STATES = (
    rules.EntryState.ACTIVE,
    rules.EntryState.EXPIRING,
    rules.EntryState.EXPIRED,
    rules.EntryState.TIER_VIOLATION,
)


def entry_counts(suite: Suite, today: date) -> dict[str, int]:
    """Open entries per state, and those ready to clear (a flag beside the state), counted
    in one query."""
    return QuarantineEntry.objects.filter(suite=suite).open().aggregate(
        **{state.value: Count("pk", filter=predicates.entry_state_q(state, today))
           for state in OPEN_STATES},
        ready_to_clear=Count("pk", filter=predicates.READY_TO_CLEAR),
    )


def gate_status_now(suite: Suite, today: date, counts: dict[str, int] | None = None):
    """Whether the suite's gate passes today (rules.GateStatusNow), from the open entries'
    counts per state (``entry_counts``, read here unless given) and the share."""
    counts = entry_counts(suite, today) if counts is None else counts
    return rules.GateStatusNow(
        expired=counts[rules.EntryState.EXPIRED],
        tier_violations=counts[rules.EntryState.TIER_VIOLATION],
        share=share_figures(suite, today),
    )
