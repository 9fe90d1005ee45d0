"""The queries of the board's busiest writes, held so that they cannot creep back: a flake
report, its replay and dry run, a verdict batch and its next attempt, a JUnit file and a
quarantine create. Each takes at most the queries it takes today (its savepoints counted),
and as many for a larger upload of the same kinds of rows: no query per row.

Each read of the straight line is made once (SPEC 2.4a, docs/architecture.md): the suite
as its lock read it, the upload's nodes, their open entries, the share, the commit's
earlier attempts; each write is one bulk statement.

Runs on whichever database DATABASE_URL selects: PostgreSQL's COPY of the rows is not a
query Django counts, so there the counts are lower still."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from junit.ingest import junit_ingest
from ledger.quarantine import quarantine_create
from runs.ingest import report_ingest, signals_ingest
from tests.helpers import STEADY, body, make_known, measurement, record
from tests.junit_files import junit_xml

FLAKY = "tests/test_pay.py::test_refund_retry"
COMMITS = itertools.count()  # a new commit each: the same body is stored once

# The most each path takes, as a few rows of each kind take it.
REPORT, REPLAY, DRY_RUN = 19, 14, 11
BATCH, NEXT_ATTEMPT = 13, 13
JUNIT = 34
CREATE_KNOWN, CREATE_UNSEEN = 12, 11


def queries(call) -> int:
    with CaptureQueriesContext(connection) as captured:
        call()
    return len(captured)


@pytest.fixture
def held(suite, today):
    """A suite of eighty steady nodes and a flaky one that holds an open entry."""
    make_known(suite, measurement(FLAKY, fails=8), steady=80)
    return quarantine_create(suite=suite, nodeid=FLAKY, owner="@finley", actor="@finley",
                             expires=today + timedelta(days=5), evidence="ci/run-3",
                             today=today)


def report_rows(size: int) -> list[dict]:
    """``size`` rows of each kind: known nodes, new ones; and the held node, failing."""
    known = [measurement(STEADY.format(i)) for i in range(size)]
    new = [measurement(f"tests/test_new.py::test_{i}") for i in range(size)]
    return [*known, *new, measurement(FLAKY, fails=3)]


def report(suite, rows, **options):
    return report_ingest(suite=suite, body=body(rows), actor="ci",
                         query={"commit": options.pop("commit")}, **options)


@pytest.mark.usefixtures("held")
def test_a_report_takes_as_many_queries_whatever_its_size(suite):
    few = queries(lambda: report(suite, report_rows(2), commit=f"c{next(COMMITS)}"))
    many = queries(lambda: report(suite, report_rows(30), commit=f"c{next(COMMITS)}"))
    assert few <= REPORT
    assert many == few


@pytest.mark.usefixtures("held")
def test_a_replay_and_a_dry_run_take_fewer_than_the_report(suite):
    rows = report_rows(2)
    report(suite, rows, commit="c1")
    assert queries(lambda: report(suite, rows, commit="c1")) <= REPLAY
    assert queries(lambda: report(suite, rows[:3], commit="c1", dry_run=True)) <= DRY_RUN


def batch(suite, size: int, patch: str) -> bytes:
    records = [record(STEADY.format(i)) for i in range(size)]
    records.append(record(FLAKY, prop="fail"))
    return signals_ingest(suite=suite, actor="ci", body=body(
        {"patch": patch, "commit": "c2", "records": records}))


@pytest.mark.usefixtures("held")
def test_a_verdict_batch_takes_as_many_queries_whatever_its_size(suite):
    few = queries(lambda: batch(suite, 4, "few"))
    many = queries(lambda: batch(suite, 40, "many"))
    assert few <= BATCH
    assert many == few


@pytest.mark.usefixtures("held")
def test_a_batchs_next_attempt_reads_the_earlier_ones_once(suite):
    batch(suite, 4, "p1")
    again = [record(STEADY.format(i)) for i in range(2)]
    assert queries(lambda: signals_ingest(suite=suite, actor="ci", body=body(
        {"patch": "p1", "commit": "c2", "records": again}))) <= NEXT_ATTEMPT


def junit_file(suite, size: int):
    cases = [("tests.test_steady", f"test_{i}", "passed") for i in range(size)]
    cases += [("tests.test_pay", "test_refund_retry", "failed"),
              ("tests.test_skip", "test_later", "skipped")]
    return junit_ingest(suite=suite, body=junit_xml(*cases), actor="ci",
                        query={"commit": f"c{next(COMMITS)}", "branch": "main"})


@pytest.mark.usefixtures("held")
def test_a_junit_file_takes_as_many_queries_whatever_its_size(suite):
    # The day's first file builds the day's summary, which the later ones add to.
    assert queries(lambda: junit_file(suite, 18)) <= JUNIT
    few = queries(lambda: junit_file(suite, 18))
    many = queries(lambda: junit_file(suite, 60))
    assert many == few <= JUNIT


@pytest.mark.usefixtures("held")
def test_a_quarantine_create_reads_its_node_and_the_share_once(suite, today):
    def create(nodeid: str):
        return lambda: quarantine_create(
            suite=suite, nodeid=nodeid, owner="@finley", actor="@finley",
            expires=today + timedelta(days=5), evidence="ci/run-4", today=today)

    assert queries(create(STEADY.format(1))) <= CREATE_KNOWN
    assert queries(create("tests/test_unseen.py::test_by_hand")) <= CREATE_UNSEEN
