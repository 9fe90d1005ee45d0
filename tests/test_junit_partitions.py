"""On PostgreSQL the testcase results are a table partitioned by day (``junit.partitions``,
migration 0009): an upload makes its day's partition, the prune drops the partitions of the
days past the retention, counting what deleting their rows would have, and the migration
keeps the rows the table held. Since migration 0014 a partition's columns are widest first
and a file's rows are found by a plain index of the file, not by a key. SQLite keeps one
table and deletes rows (tests/test_junit_prune.py)."""

from __future__ import annotations

import threading
import time
from datetime import date, datetime, timedelta
from datetime import time as clock_time

import pytest
from django.apps import apps as django_apps
from django.db import OperationalError, connection, connections
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from board.failures import failure_evidence
from junit import partitions, prune
from junit.ingest import junit_ingest
from junit.models import CaseResult
from junit.prune import prune_junit
from junit.selectors import latest_results
from ledger.models import Node
from tests.junit_files import junit_xml, migrated_back
from tests.test_junit_prune import CASES

pytestmark = pytest.mark.skipif("connection.vendor != 'postgresql'",
                                reason="PostgreSQL's partitioned tables")
DAYS_AGO = (0, 29, 30, 45)
BEFORE = ("junit", "0008_node_summary_fillfactor")
AFTER = ("junit", "0009_case_results_partitioned_by_day")
WIDER = ("junit", "0013_job_counts_read_from_results")
TABLE = partitions.TABLE


def upload(suite, today: date, days_ago: int):
    now = datetime.combine(today - timedelta(days=days_ago), clock_time(12), tzinfo=timezone.UTC)
    return junit_ingest(suite=suite, body=junit_xml(*CASES), actor="ci", now=now,
                        query={"commit": f"c{days_ago}", "branch": suite.default_branch}).file


def one(sql: str, params=()) -> object:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()[0]


def rows_by_partition() -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT tableoid::regclass::text, count(*) FROM junit_caseresult "
                       "GROUP BY 1")
        return dict(cursor.fetchall())


def exists(day: date) -> bool:
    return one("SELECT to_regclass(%s) IS NOT NULL", [partitions.partition_name(day)])


@pytest.fixture
def history(suite, today):
    return {days: upload(suite, today, days) for days in DAYS_AGO}


@pytest.mark.django_db
def test_the_table_is_partitioned_by_day_and_each_day_has_its_partition(suite, today):
    assert one("SELECT partstrat FROM pg_partitioned_table "
               "WHERE partrelid = 'junit_caseresult'::regclass") == "r"
    for days in (0, 1, 5):
        upload(suite, today, days)
    assert rows_by_partition() == {
        partitions.partition_name(today - timedelta(days=days)): len(CASES) for days in (0, 1, 5)}


@pytest.mark.django_db
def test_a_prune_drops_the_expired_days_and_keeps_the_rest_whole(suite, today, history):
    kept = {partitions.partition_name(today - timedelta(days=d)): len(CASES) for d in (0, 29)}
    pruned = prune_junit(days=30, today=today)
    assert pruned.results == 2 * len(CASES)
    assert [exists(today - timedelta(days=d)) for d in DAYS_AGO] == [True, True, False, False]
    assert rows_by_partition() == kept
    # The node page's latest results and the failures' evidence still read the kept days.
    bad = Node.objects.get(suite=suite, nodeid="tests/test_a.py::test_bad")
    assert [r.file.commit for r in latest_results(bad, 10)] == ["c0", "c29"]
    evidence = failure_evidence(suite, [bad.nodeid], today)[bad.nodeid]
    assert evidence.default_failures == ("c0", "c29")


@pytest.mark.django_db
@pytest.mark.parametrize("days", [1, 30, 31, 46])
def test_the_prune_counts_what_deleting_the_rows_would_and_a_dry_run_drops_nothing(
        history, today, days):
    # What the row deletes (SQLite's path) remove: the results of the expired files.
    deleted = CaseResult.objects.filter(file__in=prune._expired_files(days, today)).count()
    before = rows_by_partition()
    assert prune_junit(days=days, today=today, dry_run=True).results == deleted
    assert rows_by_partition() == before
    assert prune_junit(days=days, today=today).results == deleted
    assert CaseResult.objects.count() == sum(before.values()) - deleted
    assert prune_junit(days=days, today=today).results == 0


@pytest.mark.django_db
def test_the_migration_keeps_the_rows_of_a_table_it_partitions():
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE])
    assert one("SELECT count(*) FROM pg_partitioned_table") == 0
    start = date(2026, 3, 30)
    results = executor.loader.project_state(BEFORE).apps.get_model("junit", "CaseResult")
    results.objects.bulk_create(
        results(suite_id=1, node_id=n, file_id=n % 3, day=start + timedelta(days=n % 3),
                position=n, outcome="passed") for n in range(9))
    rows = sorted(results.objects.values_list("pk", "day", "position"))
    executor = MigrationExecutor(connection)
    executor.migrate([AFTER])
    results = executor.loader.project_state(AFTER).apps.get_model("junit", "CaseResult")
    assert sorted(results.objects.values_list("pk", "day", "position")) == rows
    assert rows_by_partition() == {
        partitions.partition_name(start + timedelta(days=n)): 3 for n in range(3)}
    # The key's sequence carries on after the copied rows.
    newer = results.objects.create(suite_id=1, node_id=1, file_id=1, day=start, position=9,
                                   outcome="passed")
    assert newer.pk > max(pk for pk, _, _ in rows)


@pytest.mark.django_db(transaction=True)
def test_two_uploads_making_the_same_new_day_both_go_on():
    """One connection makes the day's partition and holds it uncommitted; another, asked for
    the same day meanwhile, waits for it and then finds it made."""
    day = date(2001, 2, 3)
    other = connection.get_new_connection(connection.get_connection_params())
    failed = []

    def second():
        try:
            partitions.day_partition(day)
        except Exception as error:  # reported below
            failed.append(error)
        finally:
            connections.close_all()

    try:
        for statement in partitions.create_sql(day):  # in a transaction, not committed
            other.execute(statement)
        thread = threading.Thread(target=second)
        thread.start()
        while not one("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                      "AND wait_event_type = 'Lock' AND query LIKE 'CREATE TABLE%%'"):
            assert thread.is_alive(), failed
            time.sleep(0.01)
        other.commit()
        thread.join()
        assert failed == [] and exists(day)
    finally:
        other.rollback()
        other.execute(f"DROP TABLE IF EXISTS {partitions.partition_name(day)}")
        other.commit()
        other.close()


@pytest.mark.django_db(transaction=True)
def test_a_new_day_is_made_while_a_read_of_the_results_runs():
    """A partition is attached without the parent's exclusive lock: a read of the results
    left open in another transaction (a page's, a prune's count) does not hold it up. With
    ``CREATE TABLE … PARTITION OF`` it waited for that read, and every upload and read
    after it waited behind."""
    day = date(2001, 2, 4)
    reader = connection.get_new_connection(connection.get_connection_params())
    try:
        reader.execute("SELECT count(*) FROM junit_caseresult")  # holds its lock until commit
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '2s'")
            try:
                partitions.day_partition(day)
            finally:
                cursor.execute("RESET lock_timeout")
        assert exists(day)
        assert one("SELECT count(*) FROM pg_inherits WHERE inhrelid = %s::regclass",
                   [partitions.partition_name(day)]) == 1
        # Attaching gave it the parent's indexes: its key and the model's one.
        indexes = "SELECT count(*) FROM pg_indexes WHERE tablename = %s"
        assert one(indexes, [partitions.partition_name(day)]) == one(indexes, [TABLE]) == 2
    finally:
        reader.rollback()
        reader.close()
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {partitions.partition_name(day)}")


@pytest.fixture
def committed(suite, today):
    """Files 100 and 200 days old, committed (a test outside a transaction): the prune
    drops their partitions, so none is left to the tests after."""
    yield [upload(suite, today, days) for days in (100, 200)]
    for days in (100, 200):
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE IF EXISTS "
                           f"{partitions.partition_name(today - timedelta(days=days))}")


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_prune_detaches_concurrently_then_drops(committed, today):
    assert not connection.in_atomic_block
    assert prune_junit(days=30, today=today).results == 2 * len(CASES)
    assert not any(exists(today - timedelta(days=d)) for d in (100, 200))
    assert CaseResult.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_partition_a_stopped_prune_left_detached_is_dropped_by_the_next(committed, today):
    """One partition detached and not dropped; the other's detach stopped half way (its
    wait for a reader cancelled), left pending: the next prune finishes both."""
    detached, pending = (partitions.partition_name(today - timedelta(days=d)) for d in (100, 200))
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE junit_caseresult DETACH PARTITION {detached}")
    reader = connection.get_new_connection(connection.get_connection_params())
    try:
        reader.execute("SELECT count(*) FROM junit_caseresult")  # holds its lock until commit
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '200ms'")
            with pytest.raises(OperationalError, match="lock timeout"):
                cursor.execute(f"ALTER TABLE junit_caseresult DETACH PARTITION {pending} "
                               "CONCURRENTLY")
            cursor.execute("RESET lock_timeout")
    finally:
        reader.rollback()
        reader.close()
    assert one("SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = %s::regclass",
               [pending]) is True
    assert prune_junit(days=30, today=today).results == 2 * len(CASES)
    assert not any(exists(today - timedelta(days=d)) for d in (100, 200))


def widths(table: str) -> list[int]:
    """Each column's bytes in order (-1 for text)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT t.typlen FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
                       "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped "
                       "ORDER BY a.attnum", [table])
        return [width for (width,) in cursor.fetchall()]


def indexes(table: str) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT regexp_replace(pg_get_indexdef(indexrelid), '.* USING ', '') "
                       "FROM pg_index WHERE indrelid = %s::regclass", [table])
        return {definition for (definition,) in cursor.fetchall()}


NARROW = [8, 8, 4, 4, 4, 4, 2, 2, 2, -1, -1, -1]  # widest first: no padding between them
WIDE = [4, 4, -1, 4, 4, 4, 8, -1, -1, 8, 8, 4]  # as 0013 left them
INDEXES = {"btree (file_id)", "btree (node_id, day DESC)"}  # no key: junit 0014


@pytest.mark.django_db
def test_a_days_partition_has_its_columns_widest_first_and_no_key(suite, today):
    day = today - timedelta(days=1000)  # a day of its own: no other test's partition
    if exists(day):
        partitions.drop_partition(day)
    upload(suite, today, 1000)
    name = partitions.partition_name(day)
    assert widths(name) == widths(TABLE) == NARROW
    assert indexes(name) == indexes(TABLE) == INDEXES


def result_rows(apps) -> list[tuple]:
    return sorted(apps.get_model("junit", "CaseResult").objects.values_list(
        "file_id", "position", "day", "node_id", "attempts", "passes", "failures",
        "flaky_failures", "duration", "outcome", "message", "signature"))


@pytest.mark.django_db
def test_the_migration_to_narrower_results_keeps_every_row_both_ways():
    """Migration 0014 and back, over two days' partitions: the rows are copied into the
    narrower columns (a count past 2 bytes kept as 32,767) and back."""
    start = date(2026, 3, 30)
    with migrated_back(WIDER) as apps:
        assert widths(TABLE) == WIDE
        for n in range(2):
            partitions.day_partition(start + timedelta(days=n))
        results = apps.get_model("junit", "CaseResult")
        results.objects.bulk_create(
            results(node_id=n, file_id=n % 3, day=start + timedelta(days=n % 2), position=n,
                    outcome="failed", attempts=40_000 if n == 5 else n, passes=n // 2,
                    failures=n - n // 2, flaky_failures=n, duration=[0.123, None, 7.5][n % 3],
                    message=f"m{n}", signature=f"s{n}") for n in range(9))
        before = result_rows(apps)
    # Forwards: the same rows, the count too large for 2 bytes kept as the most it holds.
    after = [(*row[:4], min(row[4], 32_767), *row[5:]) for row in before]
    assert result_rows(django_apps) == after
    assert rows_by_partition() == {partitions.partition_name(start): 5,
                                   partitions.partition_name(start + timedelta(days=1)): 4}
    for table in (TABLE, partitions.partition_name(start)):
        assert widths(table) == NARROW and indexes(table) == INDEXES
    assert one("SELECT to_regclass('junit_caseresult_old')") is None
    with migrated_back(WIDER) as apps:
        assert result_rows(apps) == after
        assert widths(partitions.partition_name(start)) == WIDE
        assert indexes(TABLE) == {"btree (file_id, \"position\", day)",
                                  "btree (node_id, day DESC)"}
        assert one("SELECT count(*) FROM pg_constraint WHERE conrelid = %s::regclass "
                   "AND contype = 'p'", [TABLE]) == 1
