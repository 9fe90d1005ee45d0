"""The per-day reason-code rollups are exactly what the raw rows say, after any sequence of
ingests (hypothesis): duplicates and dry runs add nothing, and rebuild_rollups agrees."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from ledger.models import Suite
from ledger.quarantine import quarantine_create
from ledger.suites import suite_create
from ledger.tiers import tier_rule_add
from runs.ingest import report_ingest, signals_ingest
from runs.models import ReasonRollup
from runs.rollups import counts_from_raw, counts_from_rollups, rebuild_rollups
from tests.helpers import body, measurement, record
from tests.properties import db_property, rolled_back

DB_PROPERTY = db_property(40)
DAYS = 21
# A Monday far enough back that the whole history lies before today.
_START = timezone.now().date() - timedelta(days=DAYS + 14)
FIRST_DAY = _START - timedelta(days=_START.weekday())
NODES = [f"tests/test_pool.py::test_{i}" for i in range(6)]
QUARANTINED = NODES[0]


@dataclass(frozen=True)
class Upload:
    kind: str  # "report" or "signals"
    day: int  # days after FIRST_DAY
    hour: int
    payload: object
    dry_run: bool = False


def _report_rows(draw) -> list:
    nodes = draw(st.lists(st.sampled_from(NODES), unique=True, max_size=len(NODES)))
    rows = []
    for node in nodes:
        n = draw(st.sampled_from([5, 60, 200, 400]))
        rows.append(measurement(node, n=n, fails=draw(st.integers(0, min(n, 12)))))
    if rows and draw(st.booleans()):
        return {"measurements": rows, "selected_total": draw(st.integers(1, 40))}
    return rows


def _signal_records(draw) -> list:
    nodes = draw(st.lists(st.sampled_from(NODES), unique=True, max_size=len(NODES)))
    return [
        record(
            node,
            prop=draw(st.sampled_from(["pass", "pass", "fail", "not_run"])),
            lock=draw(st.sampled_from(["match", "match", "drifted", "missing"])),
            status=draw(st.sampled_from(["stable", "stable", "frozen"])),
            fixture_manifest=draw(st.sampled_from([None, "sha256:feed", "sha256:0bad"])),
            seed=draw(st.sampled_from([None, 7])),
            freeze_expires=draw(
                st.sampled_from([None, (FIRST_DAY + timedelta(days=8)).isoformat()])
            ),
        )
        for node in nodes
    ]


@st.composite
def uploads(draw) -> list[Upload]:
    found = []
    for _ in range(draw(st.integers(1, 9))):
        kind = draw(st.sampled_from(["report", "signals"]))
        payload = _report_rows(draw) if kind == "report" else _signal_records(draw)
        upload = Upload(kind, draw(st.integers(0, DAYS - 1)), draw(st.integers(0, 23)),
                        payload, draw(st.booleans()) and draw(st.booleans()))
        found.append(upload)
        if draw(st.booleans()) and draw(st.booleans()):
            found.append(upload)  # the same body again: stored once
    return found


@st.composite
def histories(draw) -> dict:
    """A suite's setup (an entry, a fixture pin, a late tier rule) and its uploads."""
    return {
        "entry_expires": draw(st.one_of(st.none(), st.integers(3, 15))),
        "pin": draw(st.booleans()),
        "late_rule": draw(st.booleans()),
        "uploads": draw(uploads()),
    }


def at(day: int, hour: int = 9) -> datetime:
    return datetime.combine(FIRST_DAY + timedelta(days=day), time(hour), tzinfo=UTC)


def ingest_history(slug: str, history: dict):
    """A new suite, set up and fed the history's uploads in order; returns the suite."""
    suite = suite_create(slug=slug)
    if history["pin"]:
        suite.fixture_manifest, suite.fixture_seed = "sha256:feed", 7
        suite.save()
    if history["entry_expires"] is not None:
        quarantine_create(
            suite=suite, nodeid=QUARANTINED, owner="@finley", evidence="ci/run-1",
            expires=FIRST_DAY + timedelta(days=history["entry_expires"]), actor="@finley",
            today=FIRST_DAY, now=at(0, 0), imported=True,
        )
    for i, upload in enumerate(sorted(history["uploads"], key=lambda u: (u.day, u.hour))):
        if history["late_rule"] and i == len(history["uploads"]) // 2:
            tier_rule_add(suite=suite, glob=QUARANTINED, tier=1, actor="@lead")
        ingest = report_ingest if upload.kind == "report" else signals_ingest
        ingest(suite=suite, body=body(upload.payload), actor="ci", dry_run=upload.dry_run,
               now=at(upload.day, upload.hour))
    return suite


@contextmanager
def ingested(history: dict, slug: str = "prop") -> Iterator[Suite]:
    """A suite fed the history, for one example: rolled back when the example ends."""
    with rolled_back():
        yield ingest_history(slug, history)


@DB_PROPERTY
@given(histories())
def test_rollups_match_the_raw_rows_and_rebuild_agrees(db, history) -> None:
    with ingested(history) as suite:
        raw = counts_from_raw(suite)
        assert counts_from_rollups(suite) == raw
        assert sum(raw.values()) == sum(
            ReasonRollup.objects.filter(suite=suite).values_list("count", flat=True)
        )
        rows = rebuild_rollups(suite)
        assert rows == len(raw)
        assert counts_from_rollups(suite) == raw


@DB_PROPERTY
@given(histories())
def test_rebuild_from_nothing_restores_the_same_rollups(db, history) -> None:
    with ingested(history) as suite:
        before = counts_from_rollups(suite)
        ReasonRollup.objects.filter(suite=suite).delete()
        assert counts_from_rollups(suite) == {}
        rebuild_rollups(suite)
        assert counts_from_rollups(suite) == before == counts_from_raw(suite)


def test_dry_runs_and_duplicates_add_nothing(suite) -> None:
    rows = [measurement(NODES[1], fails=9)]
    report_ingest(suite=suite, body=body(rows), actor="ci", now=at(1))
    once = counts_from_rollups(suite)
    report_ingest(suite=suite, body=body(rows), actor="ci", now=at(2))
    report_ingest(suite=suite, body=body([measurement(NODES[2])]), actor="ci", dry_run=True,
                  now=at(3))
    assert counts_from_rollups(suite) == once == {
        ("reports", FIRST_DAY + timedelta(days=1), "over_budget"): 1
    }
