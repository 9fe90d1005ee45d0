"""The charts of the trends page and the overview, built from what ``trend_counts`` counts,
each with the table and CSV that carry the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta
from itertools import accumulate
from typing import NamedTuple

from flakeboard import rules
from flakeboard.rules.trends import Gate, Reading, Tone, read_distribution, shade_of, tone_of
from flakeboard.rules.trends_range import (
    BUCKET_DAYS,
    DayRange,
    charted_range,
    days_covered,
)
from ledger.models import Suite

from .trend_counts import (
    SOURCES,
    birth_counts,
    expiring_per_week,
    first_data_day,
    peak_per_bucket,
    reason_counts,
    retry_counts,
    share_over_time,
)

# The codes each source counts when all is well: hidden from the charts unless asked for.
CLEAN_REASONS = {"verdicts": (rules.Reason.CLEAN,),
                 "reports": (rules.Reason.WITHIN_BUDGET, rules.Reason.NEW_TEST_CLEAN)}
REASON_ORDER = {reason.value: i for i, reason in enumerate(rules.Reason)}
OVERVIEW_DAYS = 30


@dataclass(frozen=True)
class Column:
    label: str
    values: list
    drawn: bool = True  # False: in the table and CSV only
    limit: bool = False  # a reference line, such as the cap
    tone: Tone | None = None  # None: the chart's own colour, not an outcome's
    shade: int = 0  # which of the tone's shades


@dataclass(frozen=True)
class Chart:
    key: str  # its name in URLs and element ids
    title: str
    kind: str  # "bar" or "line"
    index_label: str  # heading of the table's first column
    labels: list[str]
    columns: list[Column]
    stacked: bool = False
    horizontal: bool = False
    unit: str = ""
    reading: Reading | None = None
    description: str = ""
    tones: list[tuple[Tone, int]] | None = None  # (tone, shade) per label, for one series
    # How many days each label's bucket covers: fewer than a full bucket at the range's edges.
    days: list[int] | None = None
    bucket: str = "day"
    empty: str = "Nothing to draw for this range."  # said in place of a chart with no data

    @property
    def full_days(self) -> int:
        return BUCKET_DAYS[self.bucket]

    @property
    def has_data(self) -> bool:
        return any(v for column in self.columns if column.drawn for v in column.values)

    @property
    def element_id(self) -> str:
        return f"chart-{self.key}"

    @property
    def partial(self) -> list[tuple[str, int]]:
        """The buckets covering fewer days than a full one, with their days."""
        if not self.days:
            return []
        return [(label, days) for label, days in zip(self.labels, self.days, strict=True)
                if days < self.full_days]

    @property
    def partial_note(self) -> str:
        """The sentence under the chart naming its partial buckets."""
        if not self.partial:
            return ""
        listed = " and ".join(f"{label} ({days} day{'s' if days != 1 else ''})"
                              for label, days in self.partial)
        drawn = "lighter bars" if self.kind == "bar" else "hollow points, dashed lines"
        return (f"Partial {self.bucket}s, cut by the range: {listed}, of {self.full_days} "
                f"days ({drawn}).")

    @property
    def spec(self) -> dict:
        """What static/js/charts.js draws."""
        datasets = []
        for column in self.columns:
            if column.drawn:
                dataset = {"label": column.label, "data": column.values}
                if column.limit:
                    dataset["limit"] = True
                if column.tone:
                    dataset.update(tone=column.tone.value, shade=column.shade)
                datasets.append(dataset)
        spec = {
            "type": self.kind,
            "labels": self.labels,
            "datasets": datasets,
            "stacked": self.stacked,
            "horizontal": self.horizontal,
            "unit": self.unit,
        }
        if self.tones:
            spec["tones"] = [{"tone": tone.value, "shade": shade} for tone, shade in self.tones]
        if self.partial:
            spec.update(days=self.days, full_days=self.full_days)
        return spec

    @property
    def _counts_days(self) -> bool:
        return self.days is not None and self.full_days > 1

    @property
    def header(self) -> list[str]:
        days = ["days"] if self._counts_days else []
        return [self.index_label, *days, *(column.label for column in self.columns)]

    @property
    def rows(self) -> list[list]:
        return [
            [label, *([self.days[i]] if self._counts_days else []),
             *(column.values[i] for column in self.columns)]
            for i, label in enumerate(self.labels)
        ]


def bucket_days(labels: list[str], bucket: str, charted: DayRange) -> dict:
    """The Chart fields saying how many of the charted days each bucket covers."""
    days = [days_covered(date.fromisoformat(label), bucket, charted.start, charted.end)
            for label in labels]
    return {"days": days, "bucket": bucket}


def _shown(counts: dict, source: str, include_clean: bool) -> dict[str, list[int]]:
    series = counts["series"]
    if not include_clean:
        series = {r: c for r, c in series.items() if r not in CLEAN_REASONS[source]}
    return dict(sorted(series.items(), key=lambda item: REASON_ORDER[item[0]]))


def _reason_column(gate: Gate, reason: str, values: list) -> Column:
    """A reason code's series, in the tone of the outcome it comes with on ``gate``."""
    return Column(reason, values, tone=tone_of(gate, reason), shade=shade_of(gate, reason))


def reason_chart(counts: dict, *, key: str, title: str, source: str, bucket: str,
                 include_clean: bool, days: dict | None = None) -> Chart:
    series = _shown(counts, source, include_clean)
    totals = [sum(values) for values in zip(*series.values(), strict=True)] or [
        0 for _ in counts["buckets"]
    ]
    gate = SOURCES[source]
    return Chart(
        key=key, title=title, kind="bar", index_label=bucket.capitalize(),
        labels=counts["buckets"],
        columns=[_reason_column(gate, r, v) for r, v in series.items()]
        + [Column("total", totals, False)],
        stacked=True, **(days or {}),
    )


def cumulative_chart(counts: dict, *, key: str, title: str, source: str, bucket: str,
                     include_clean: bool, days: dict | None = None) -> Chart:
    series = _shown(counts, source, include_clean)
    gate = SOURCES[source]
    return Chart(
        key=key, title=title, kind="line", index_label=f"Up to {bucket}",
        labels=counts["buckets"],
        columns=[_reason_column(gate, r, list(accumulate(v))) for r, v in series.items()],
        **(days or {}),
    )


def distribution_chart(counts: dict, *, key: str, title: str, source: str,
                       include_clean: bool) -> Chart:
    totals = {r: sum(v) for r, v in _shown(counts, source, include_clean).items()}
    ranked = sorted(totals.items(), key=lambda item: (-item[1], REASON_ORDER[item[0]]))
    whole = sum(totals.values())
    shares = [round(100 * c / whole, 1) if whole else 0.0 for _, c in ranked]
    gate = SOURCES[source]
    return Chart(
        key=key, title=title, kind="bar", index_label="Reason",
        labels=[r for r, _ in ranked],
        columns=[Column("% of shown", shares), Column("count", [c for _, c in ranked], False)],
        horizontal=True, unit="%",
        reading=read_distribution(counts["totals"], gate),
        tones=[(tone_of(gate, r), shade_of(gate, r)) for r, _ in ranked],
    )


def share_chart(suite: Suite, *, charted: DayRange | None, bucket: str) -> Chart:
    """The peak share per bucket of the charted days against the cap; no point, and no cap,
    on a day the test set was empty (nothing to share)."""
    points = [] if charted is None else peak_per_bucket(
        share_over_time(suite, start=charted.start, end=charted.end), bucket)
    cap = round(100 * suite.max_quarantined_share, 2)
    peak = bucket == "week"
    labels = [d.isoformat() for d, _ in points]
    return Chart(
        key="share", title="Quarantined share against the cap", kind="line",
        index_label="Week" if peak else "Day",
        labels=labels,
        columns=[
            Column("peak share %" if peak else "share %",
                   [round(100 * p.share, 2) if p.size else None for _, p in points],
                   tone=Tone.NEUTRAL),
            Column("cap %", [cap if p.size else None for _, p in points], limit=True,
                   tone=Tone.FAIL),
            Column("quarantined", [p.quarantined for _, p in points], False),
            Column("test set", [p.size for _, p in points], False),
        ],
        unit="%",
        description=(
            "Entries counting toward the share (open, unexpired, not tier violations) "
            "over the test set, at the end of each day: the tests of CI's run on the "
            "default branch that day, or where none had run, the nodes the suite knew."
        ),
        **(bucket_days(labels, bucket, charted) if charted else {}),
    )


def expiring_chart(suite: Suite, today: date) -> Chart:
    expired, weeks = expiring_per_week(suite, today)
    return Chart(
        key="expiring", title="Open entries by expiry, week by week ahead", kind="bar",
        index_label="Week starting", labels=["expired", *(d.isoformat() for d, _ in weeks)],
        columns=[Column("entries", [expired, *(c for _, c in weeks)])],
        description="Expired entries fail their gate until renewed or cleared.",
        tones=[(Tone.FAIL, 0), *((Tone.NEUTRAL, 0) for _ in weeks)],
    )


class RetrySeries(NamedTuple):
    """One chart of retries at one commit: the series of ``trend_counts.retry_counts`` it
    draws, and what it says."""

    key: str
    series: str
    title: str
    label: str
    tone: Tone
    description: str
    empty: str


RETRY_SERIES = (
    RetrySeries(
        "after-reject", "after_reject", "Attempts after a REJECT at the same commit",
        "attempts after a reject", Tone.FAIL,
        "Verdict batches whose previous attempt at the same patch and commit was already "
        "REJECT: reruns hoping for green. Each still rejects, since a retry adds evidence and "
        "never replaces it.",
        "No attempt after a REJECT at the same commit in this range.",
    ),
    RetrySeries(
        "flips", "flips", "Nodes that flipped between attempts", "nodes flipped", Tone.WARN,
        "Nodes that failed in one attempt and passed in another at the same patch and commit: "
        "flaky evidence, each counted once, on the day of the attempt where it first flipped.",
        "No node flipped between attempts in this range.",
    ),
)


def retry_charts(counts: dict, *, bucket: str, days: dict | None = None) -> list[Chart]:
    """Retries at one commit (SPEC 2.4a), from ``trend_counts.retry_counts``: the attempts
    made after a REJECT at the same patch and commit, and the nodes that flipped."""
    return [
        Chart(key=chart.key, title=f"{chart.title}, per {bucket}", kind="bar",
              index_label=bucket.capitalize(), labels=counts["buckets"],
              columns=[Column(chart.label, counts[chart.series], tone=chart.tone)],
              description=chart.description, empty=chart.empty, **(days or {}))
        for chart in RETRY_SERIES
    ]


def birth_chart(counts: dict, *, bucket: str, days: dict | None = None) -> Chart:
    """New tests flaky at birth (docs/new-tests.md), from ``trend_counts.birth_counts``, with
    the new tests the guard measured beside them in the table."""
    return Chart(
        key="births", title=f"New tests flaky at birth, per {bucket}", kind="bar",
        index_label=bucket.capitalize(), labels=counts["buckets"],
        columns=[Column("new tests flaky at birth", counts["flaky"], tone=Tone.FAIL),
                 Column("new tests measured at birth", counts["measured"], drawn=False)],
        description="New tests that both passed and failed in the runs gate --measure gave "
                    "them at the commit that added them (new_test_flaky), each counted once, "
                    "on the day of its first such report. The table also gives every new test "
                    "the guard measured.",
        empty="No new test was flaky at birth in this range.", **(days or {}))


@dataclass(frozen=True)
class TrendCharts:
    verdicts: list[Chart] = field(default_factory=list)  # per-node verdict reasons
    retries: list[Chart] = field(default_factory=list)  # attempts at one commit
    budget: list[Chart] = field(default_factory=list)  # budget-gate outcomes
    ledger: list[Chart] = field(default_factory=list)  # share and expiries
    note: str = ""  # why the charts start after the range does, or are empty

    def by_key(self) -> dict[str, Chart]:
        return {c.key: c for c in (*self.verdicts, *self.retries, *self.budget, *self.ledger)}


# source → (chart key, chart name)
_GROUPS = {
    "verdicts": ("verdicts", "Verdict reasons"),
    "reports": ("budget", "Budget-gate reasons"),
}


def _range_note(start: date, end: date, first: date | None,
                charted: DayRange | None) -> str:
    if first is None:
        return "Nothing uploaded or quarantined yet: the charts start with the first upload."
    if charted is None:
        return (f"Nothing uploaded or quarantined in this range: the first upload or entry "
                f"is on {first}.")
    if charted.start > start:
        return f"No uploads or entries before {first}; the charts start there."
    return ""


def trend_charts(suite: Suite, *, start: date, end: date, bucket: str, include_clean: bool,
                 today: date) -> TrendCharts:
    """Every chart of the trends page, each read once from the rollups or the ledger, over
    the days of [start, end] from the suite's first data on."""
    first = first_data_day(suite)
    charted = charted_range(start, end, first)
    groups = {}
    for source, (key, name) in _GROUPS.items():
        if charted is None:
            counts, days = {"buckets": [], "series": {}, "totals": {}}, None
        else:
            counts = reason_counts(suite, start=charted.start, end=charted.end,
                                   bucket=bucket, source=source)
            days = bucket_days(counts["buckets"], bucket, charted)
        shown = {"source": source, "include_clean": include_clean}
        groups[key] = [
            reason_chart(counts, key=key, title=f"{name} per {bucket}", bucket=bucket,
                         days=days, **shown),
            cumulative_chart(counts, key=f"{key}-cumulative", title=f"{name}, accumulated",
                             bucket=bucket, days=days, **shown),
            distribution_chart(counts, key=f"{key}-distribution",
                               title=f"{name}, distribution over the range", **shown),
        ]
    if charted is None:
        retries, days = {"buckets": [], "after_reject": [], "flips": []}, None
        births = {"buckets": [], "flaky": [], "measured": []}
    else:
        retries = retry_counts(suite, start=charted.start, end=charted.end, bucket=bucket)
        births = birth_counts(suite, start=charted.start, end=charted.end, bucket=bucket)
        days = bucket_days(retries["buckets"], bucket, charted)
    ledger = [share_chart(suite, charted=charted, bucket=bucket),
              expiring_chart(suite, today)]
    budget = [*groups["budget"], birth_chart(births, bucket=bucket, days=days)]
    return TrendCharts(groups["verdicts"], retry_charts(retries, bucket=bucket, days=days),
                       budget, ledger, _range_note(start, end, first, charted))


def overview_chart(suite: Suite, today: date, days: int = OVERVIEW_DAYS) -> Chart:
    """The overview's reason-code chart: non-clean verdict reasons per day."""
    start = today - timedelta(days=days - 1)
    counts = reason_counts(suite, start=start, end=today, bucket="day", source="verdicts")
    return reason_chart(counts, key="verdicts", title=f"Verdict reasons, last {days} days",
                        source="verdicts", bucket="day", include_clean=False)
