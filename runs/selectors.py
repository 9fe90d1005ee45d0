"""Reads of uploads: recent uploads, a report's and a batch's rows, a node's history.

Each returns what a page shows in a fixed number of queries, however many rows there are.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from django.db.models import Case, Count, IntegerField, Value, When

from flakeboard import rules
from ledger.models import Node, QuarantineEntry, Suite
from ledger.selectors import open_entries_by_node, tier_rule_specs

from .broken import Broken, broken
from .models import Measurement, Report, VerdictBatch

# The node page's chart: its latest measurements. Its tables page through them all.
NODE_MEASUREMENTS = 90
LATEST_MEASUREMENTS = 5


def recent_uploads(suite: Suite, limit: int = 5) -> dict:
    return {
        "recent_reports": list(Report.objects.filter(suite=suite)[:limit]),
        "recent_batches": list(VerdictBatch.objects.filter(suite=suite)[:limit]),
    }


def _in_order(field: str, values) -> Case:
    """``field``'s rank in ``values`` (after them all when it is none of them)."""
    return Case(
        *(When(**{field: value}, then=Value(rank)) for rank, value in enumerate(values)),
        default=Value(len(values)),
        output_field=IntegerField(),
    )


def counts_by(rows, group: str) -> dict[str, dict[str, int]]:
    """How many of ``rows`` have each value of ``group`` and each reason code, in one query:
    the figures of a page's summary and of its filters' choices."""
    counts: dict[str, dict[str, int]] = {group: {}, "reason": {}}
    pairs = rows.order_by().values_list(group, "reason").annotate(count=Count("pk"))
    for value, reason, count in pairs:
        counts[group][value] = counts[group].get(value, 0) + count
        counts["reason"][reason] = counts["reason"].get(reason, 0) + count
    return counts


def report_measurements(report: Report, status: str | None = None, reason: str | None = None):
    """A report's measurements, failing first, then warnings, then the rest."""
    rows = report.measurements.select_related("node", "entry")
    if status:
        rows = rows.filter(status=status)
    if reason:
        rows = rows.filter(reason=reason)
    severity = _in_order("status", [rules.GateStatus.FAIL.value, rules.GateStatus.WARN.value])
    return rows.annotate(severity=severity).order_by("severity", "position")


@dataclass(frozen=True)
class ReportRow:
    measurement: Measurement
    entry: QuarantineEntry | None  # the node's open entry now, else the one at upload
    tier: rules.TierResolution

    @property
    def failing(self) -> bool:
        return self.measurement.status == rules.GateStatus.FAIL

    @property
    def tier_refused(self) -> bool:
        return not rules.quarantinable(self.tier.tier)

    @property
    def broken(self) -> Broken | None:
        """Failed every run: broken, not flaky (``runs.broken``)."""
        return broken(self.measurement)

    @property
    def quarantinable(self) -> bool:
        """A tier-2 row over budget whose node holds no open entry, and which passed some
        run: what a quarantine is for. A row with too few runs needs more runs, not an
        entry; a broken one a fix."""
        open_entry = self.entry is not None and self.entry.cleared_at is None
        over = self.measurement.reason == rules.Reason.OVER_BUDGET
        return over and not self.tier_refused and not open_entry and not self.broken

    @property
    def mismatch(self) -> bool:
        return rules.Flag.UPPER95_MISMATCH.value in self.measurement.flags

    @property
    def tier_disagrees(self) -> bool:
        """The row stated a tier the tier rules did not give its node at upload."""
        return rules.Flag.TIER_DISAGREES.value in self.measurement.flags

    @property
    def birth(self) -> str:
        """What the new-test guard's runs showed, on its rows ("new: 0/30 failed, rate ≤
        11.4% at 95%"): judged on the counts pooled at the commit, when there are some."""
        m = self.measurement
        if m.reason not in rules.NEW_TEST_REASONS:
            return ""
        counts = m.pooled or {"n": m.n, "fails": m.fails}
        return rules.birth_sentence(counts["n"], counts["fails"])


def report_rows(suite: Suite, measurements) -> list[ReportRow]:
    """Rows of the report page: each measurement with its entry and its node's tier."""
    measurements = list(measurements)
    open_entries = open_entries_by_node(suite, [m.node_id for m in measurements])
    specs = tier_rule_specs(suite)
    return [
        ReportRow(
            measurement=m,
            entry=open_entries.get(m.node_id) or m.entry,
            tier=rules.resolve_tier(m.node.nodeid, specs),
        )
        for m in measurements
    ]


def batch_verdicts(batch: VerdictBatch, *, verdict: str | None = None, reason: str | None = None):
    rows = batch.verdicts.select_related("node", "entry")
    if verdict:
        rows = rows.filter(verdict=verdict)
    if reason:
        rows = rows.filter(reason=reason)
    # As the page says: in the arbiter's precedence order, then as uploaded.
    precedence = _in_order("reason", [code.value for code in rules.PRECEDENCE_ORDER])
    return rows.annotate(precedence=precedence).order_by("precedence", "position")


@dataclass(frozen=True)
class QuarantinePeriod:
    """A span of days the node was quarantined: an entry from the day it was made to the
    day it was cleared, or to today while it is open."""

    entry: QuarantineEntry
    start: date
    end: date
    open: bool

    @property
    def days(self) -> int:
        return self.entry.age_days(self.end)


def quarantine_periods(entries: list[QuarantineEntry], today: date) -> list[QuarantinePeriod]:
    """The periods of ``entries``, oldest first."""
    periods = [
        QuarantinePeriod(
            entry,
            entry.created_at.date(),
            entry.cleared_at.date() if entry.cleared_at else today,
            entry.cleared_at is None,
        )
        for entry in entries
    ]
    return sorted(periods, key=lambda period: (period.start, period.entry.pk))


@dataclass(frozen=True)
class NodeHistory:
    resolution: rules.TierResolution
    measurements: list[Measurement]  # the chart's, oldest first
    entries: list[QuarantineEntry]  # newest first
    periods: list[QuarantinePeriod]  # oldest first
    chart: dict

    @property
    def broken(self) -> Broken | None:
        """Whether the node's latest measurement shows it broken (``runs.broken``)."""
        return broken(self.measurements[-1]) if self.measurements else None


def latest_measurements(node: Node, limit: int = LATEST_MEASUREMENTS) -> list[Measurement]:
    return list(node.measurements.order_by("-created_at", "-pk")[:limit])


def node_measurements(node: Node):
    """Every measurement of the node, newest first, with its report (for its budget)."""
    return node.measurements.select_related("report").order_by("-created_at", "-pk")


def node_verdicts(node: Node):
    """Every verdict on the node, newest first."""
    return node.verdicts.order_by("-created_at", "-pk")


def with_budgets(suite: Suite, measurements) -> list[Measurement]:
    """``measurements``, each with ``budget`` set: the budget in force at its upload, or
    today's for a report stored before it was kept."""
    measurements = list(measurements)
    for m in measurements:
        policy = m.report.judged_policy
        m.budget = policy.max_upper_rate if policy else suite.max_upper_rate
    return measurements


def measurement_chart(measurements: list[Measurement],
                      periods: list[QuarantinePeriod] = ()) -> dict:
    """upper95 against the budget each was judged by, in the shape static/js/charts.js
    draws (``budget`` is set by with_budgets), with the quarantine periods as shaded
    ``bands`` behind them."""
    return {
        "type": "line",
        "labels": [m.created_at.date().isoformat() for m in measurements],
        "datasets": [
            {"label": "upper95", "data": [round(m.upper95, 4) for m in measurements]},
            {"label": "budget", "data": [m.budget for m in measurements]},
        ],
        "bands": [
            {"from": period.start.isoformat(), "to": period.end.isoformat(),
             "label": f"entry {period.entry.pk}"}
            for period in periods
        ],
    }


def node_history(suite: Suite, node: Node, today: date) -> NodeHistory:
    measurements = with_budgets(suite, node_measurements(node)[:NODE_MEASUREMENTS])
    measurements.reverse()
    entries = list(
        QuarantineEntry.objects.filter(suite=suite, node=node)
        .select_related("node")
        .order_by("-created_at", "-pk")
    )
    periods = quarantine_periods(entries, today)
    return NodeHistory(
        resolution=rules.resolve_tier(node.nodeid, tier_rule_specs(suite)),
        measurements=measurements,
        entries=entries,
        periods=periods,
        chart=measurement_chart(measurements, periods),
    )
