"""How the JUnit rows are stored. The raw rows (``CaseResult``) have no foreign key in the
database, whose check at the commit cost an upload more than writing them: deleting their
suite, node or file still deletes them (Django's ``CASCADE``), and the prune leaves none
without its suite, node or file. A result has no id: it is keyed by its place in its file.
They are the only raw rows: a job's counts are read from them (``junit.detect``). On
PostgreSQL the summary and the day's rollups, whose rows every upload updates, keep room on
their pages for the updates."""

from __future__ import annotations

import pytest
from django.db import DataError, connection, transaction
from django.db.models import F

from junit import ingest
from junit.ingest import junit_ingest
from junit.models import (
    CaseResult,
    JUnitFile,
    NodeDay,
    NodeSummary,
    SignatureDay,
    SignatureSummary,
    node_results,
)
from junit.parse import JUnitInvalid
from junit.prune import prune_junit
from junit.rules import ATTEMPTS_MAX, DURATION_MAX_S
from junit.selectors import latest_results
from ledger.models import Node
from ledger.refusals import Code
from tests.junit_files import junit_xml, migrated_back
from tests.test_junit_prune import upload

pytestmark = pytest.mark.django_db
RAW_KEYS = {CaseResult: ("node", "file")}


def orphans() -> dict[str, int]:
    """Raw rows whose suite, node or file is gone, counted by model and key."""
    found = {}
    for model, keys in RAW_KEYS.items():
        for key in keys:
            parents = model._meta.get_field(key).related_model.objects.values("pk")
            count = model.objects.exclude(**{f"{key}_id__in": parents}).count()
            if count:
                found[f"{model.__name__}.{key}"] = count
    return found


def raw_rows(suite) -> int:
    return CaseResult.objects.filter(file__suite_id=suite.pk).count()


@pytest.fixture
def stored(suite, other_suite) -> list[JUnitFile]:
    """Two files of the suite (today, and 40 days ago) and one of the other suite."""
    files = [upload(suite, 0, "c0"), upload(suite, 40, "c40"), upload(other_suite, 0, "c0")]
    assert raw_rows(suite) == 4 and raw_rows(other_suite) == 2
    return files


def test_a_results_counts_and_duration_hold_what_a_file_may_say(stored):
    """The counts take 2 bytes and the duration 4 (junit 0014): the most a file may hold
    is stored, and a duration reads back as it was written, not as its nearest float."""
    row = CaseResult.objects.filter(file=stored[0])
    most = {"attempts": ATTEMPTS_MAX, "passes": ATTEMPTS_MAX, "failures": ATTEMPTS_MAX}
    for duration in (0.123, 0.001, 12.5, DURATION_MAX_S * ATTEMPTS_MAX):
        row.update(**most, duration=duration)
        assert set(row.values_list("attempts", "passes", "failures", "duration")) == {
            (ATTEMPTS_MAX, ATTEMPTS_MAX, ATTEMPTS_MAX, duration)}
    if connection.vendor == "postgresql":
        with pytest.raises(DataError), transaction.atomic():
            row.update(attempts=ATTEMPTS_MAX + 1)


def cases_timed(*times: str) -> bytes:
    cases = "".join(f'<testcase classname="tests.test_t" name="test_{n}" time="{time}"/>'
                    for n, time in enumerate(times))
    return f'<testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>'.encode()


def test_a_duration_past_the_limit_is_unknown(suite):
    file = junit_ingest(suite=suite, actor="ci", query={"commit": "c1"},
                        body=cases_timed("0.123", f"{DURATION_MAX_S:.0f}", "1e12", "inf"))
    assert list(file.file.results.values_list("duration", flat=True)) == [
        0.123, DURATION_MAX_S, None, None]


def test_a_file_repeating_a_test_past_the_attempts_limit_is_refused(suite, monkeypatch):
    monkeypatch.setattr(ingest, "ATTEMPTS_MAX", 3)
    nodes = Node.objects.count()
    body = junit_xml(("tests.test_a", "test_other", "passed"),
                     *[("tests.test_a", "test_again", "passed")] * 4)
    with pytest.raises(JUnitInvalid) as refused:
        junit_ingest(suite=suite, body=body, actor="ci", query={"commit": "c1"})
    (problem,) = refused.value.problems
    assert (problem.code, problem.row, problem.field) == (Code.OUT_OF_RANGE, 1, "name")
    assert "repeated 4 times in the file: at most 3 attempts" in problem.message
    assert not JUnitFile.objects.exists() and Node.objects.count() == nodes
    body = junit_xml(*[("tests.test_a", "test_again", "passed")] * 3)
    stored = junit_ingest(suite=suite, body=body, actor="ci", query={"commit": "c1"}).file
    assert list(stored.results.values_list("attempts", flat=True)) == [3]


def test_the_raw_rows_have_no_foreign_key_in_the_database():
    with connection.cursor() as cursor:
        keys = {model._meta.db_table: sorted(
            name for name, constraint in connection.introspection.get_constraints(
                cursor, model._meta.db_table).items() if constraint["foreign_key"])
            for model in RAW_KEYS}
    assert keys == {"junit_caseresult": []}


def test_the_rollups_have_no_foreign_key_in_the_database_and_go_with_their_suite(
        suite, other_suite, stored):
    """junit 0015: PostgreSQL checked each key of each rollup inserted at the commit."""
    rollups = (NodeDay, SignatureDay, NodeSummary, SignatureSummary)
    with connection.cursor() as cursor:
        keys = {model._meta.db_table: [
            name for name, constraint in connection.introspection.get_constraints(
                cursor, model._meta.db_table).items() if constraint["foreign_key"]]
            for model in rollups}
    assert keys == {model._meta.db_table: [] for model in rollups}
    assert NodeDay.objects.filter(suite=suite).exists()
    assert SignatureDay.objects.filter(suite=suite).exists()
    suite.delete()
    for model in rollups:
        assert not model.objects.filter(suite_id=suite.pk).exists()
        assert not model.objects.exclude(node__in=Node.objects.all()).exists()
    assert NodeDay.objects.filter(suite=other_suite).exists()


def test_a_tests_results_are_read_through_their_index(suite, stored):
    """On SQLite each day's results by node (junit 0016), found with the days of the suite's
    files; on PostgreSQL each day's partition's results by node."""
    node = Node.objects.get(suite=suite, nodeid="tests/test_a.py::test_bad")
    for results in (node_results(suite.pk, node_id=node.pk),
                    node_results(suite.pk, node_id__in=[node.pk, node.pk + 1])):
        sql, params = results.query.sql_with_params()
        with connection.cursor() as cursor:
            if connection.vendor == "sqlite":
                cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
                plan = [row[-1] for row in cursor.fetchall()]
                found = "USING INDEX caseresult_node_recent (day=? AND node_id=?)"
            else:
                cursor.execute("SET LOCAL enable_seqscan = off")
                cursor.execute(f"EXPLAIN {sql}", params)
                plan = [row[0] for row in cursor.fetchall()]
                found = "Index Cond:"
        assert any(found in line and "node_id" in line for line in plan), plan
        assert not any("SCAN junit_caseresult" in line for line in plan), plan
    assert [r.file.commit for r in latest_results(node, 10)] == ["c0", "c40"]


def test_the_results_are_the_only_raw_rows():
    with connection.cursor() as cursor:
        tables = connection.introspection.table_names(cursor)
    assert "junit_caseresult" in tables
    assert not {"junit_joboutcome", "junit_jobrun"} & set(tables)


def test_deleting_a_suite_deletes_its_raw_rows(suite, other_suite, stored):
    suite.delete()
    assert raw_rows(suite) == 0 and raw_rows(other_suite) == 2
    assert orphans() == {}


def columns_and_indexes(model) -> tuple[set[str], list[str], dict[tuple[str, ...], bool]]:
    """A table's columns, its primary key's columns in order, and its other indexes by
    their columns (unique or not), the checks left out."""
    table = model._meta.db_table
    with connection.cursor() as cursor:
        columns = {column.name for column in connection.introspection.get_table_description(
            cursor, table)}
        if connection.vendor == "sqlite":  # Django's introspection gives the table's order
            cursor.execute("SELECT name FROM pragma_table_info(%s) WHERE pk > 0 ORDER BY pk",
                           [table])
            key = [name for (name,) in cursor.fetchall()]
        else:
            key = connection.introspection.get_primary_key_columns(cursor, table)
        constraints = connection.introspection.get_constraints(cursor, table)
    return columns, key, {tuple(c["columns"]): c["unique"] for c in constraints.values()
                          if not c["check"] and not c["primary_key"] and c["columns"]}


def result_keys() -> tuple[list[str] | None, dict[tuple[str, ...], bool]]:
    """How the results are found: by their place in their file, the key on SQLite and on
    PostgreSQL a plain index of the file (junit 0014); a node's by day, on SQLite each
    day's by node (junit 0016)."""
    if connection.vendor == "sqlite":
        return ["file_id", "position", "day"], {("day", "node_id"): False}
    return None, {("node_id", "day"): False, ("file_id",): False}


def test_a_result_is_keyed_by_its_place_in_its_file():
    columns, key, indexes = columns_and_indexes(CaseResult)
    assert columns == {"file_id", "node_id", "day", "position", "outcome", "attempts",
                       "passes", "failures", "flaky_failures", "duration", "message",
                       "signature"}
    # No id, no suite.
    assert (key, indexes) == result_keys()


RESULT = ("file_id", "position", "day", "node_id", "outcome", "attempts", "passes",
          "failures", "duration", "message", "signature")
KEYED_BY_ID = ("junit", "0010_job_outcomes_keyed_by_job_run")


@pytest.mark.django_db(transaction=True)
def test_the_migration_to_keys_of_place_keeps_every_row_both_ways(suite, other_suite, stored):
    """Migration 0011 and back, over results of two days (two partitions on PostgreSQL)."""
    results = sorted(CaseResult.objects.values_list(*RESULT))
    with migrated_back(KEYED_BY_ID) as apps:
        old_results = apps.get_model("junit", "CaseResult").objects
        old_counts = apps.get_model("junit", "JobOutcome").objects
        assert sorted(old_results.values_list(*RESULT)) == results
        # Backwards, each row has an id of its own, and a result its file's suite.
        assert len(set(old_results.values_list("pk", flat=True))) == len(results)
        assert len(set(old_counts.values_list("pk", flat=True))) == old_counts.count() == 6
        assert not old_results.exclude(suite_id=F("file__suite_id")).exists()
        assert old_results.filter(suite_id=suite.pk).count() == 4
        # The ids' sequence goes on after them.
        newest = old_results.order_by("-pk").first()
        added = old_results.create(suite_id=suite.pk, file_id=newest.file_id, day=newest.day,
                                   node_id=newest.node_id, position=99, outcome="passed")
        assert added.pk > newest.pk
        added.delete()
    assert sorted(CaseResult.objects.values_list(*RESULT)) == results
    assert columns_and_indexes(CaseResult)[1:] == result_keys()


def test_deleting_a_node_deletes_its_raw_rows(suite, other_suite, stored):
    bad = Node.objects.filter(suite=suite, nodeid="tests/test_a.py::test_bad")
    assert bad.count() == 1
    bad.delete()
    assert raw_rows(suite) == 2 and raw_rows(other_suite) == 2
    assert orphans() == {}


def test_deleting_a_file_deletes_its_results(suite, stored):
    stored[0].delete()
    assert raw_rows(suite) == 2
    assert orphans() == {}


def test_the_prune_leaves_no_raw_row_without_its_suite_node_or_file(suite, other_suite,
                                                                  stored, today):
    pruned = prune_junit(days=30, today=today)
    assert pruned.results == 2
    assert raw_rows(suite) == 2 and raw_rows(other_suite) == 2
    assert orphans() == {}


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's fillfactor")
@pytest.mark.parametrize(("model", "percent"), [(NodeSummary, 70), (NodeDay, 50)])
def test_the_rollups_updated_by_every_file_keep_room_on_their_pages(model, percent):
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = %s",
                       [model._meta.db_table])
        assert cursor.fetchone()[0] == [f"fillfactor={percent}"]


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's HOT updates")
def test_a_days_later_file_updates_its_tests_rollups_on_their_pages(suite):
    """The day's second file of 1,000 tests updates each test's row of the day: the updates
    find room on their row's page and write no index entry (junit 0017: half-full pages;
    with 30% free, fewer than half did, and with full pages only the last page's would)."""
    cases = [("tests.test_many", f"test_{i:04d}", "passed") for i in range(1000)]

    def updates() -> tuple[int, int]:
        # The counts not yet sent to the statistics, an earlier transaction's among them:
        # the second file's are the difference.
        with connection.cursor() as cursor:
            cursor.execute("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables "
                           "WHERE relname = %s", [NodeDay._meta.db_table])
            return cursor.fetchone()

    junit_ingest(suite=suite, body=junit_xml(*cases), actor="ci", query={"commit": "c1"})
    before = updates()
    junit_ingest(suite=suite, body=junit_xml(*cases), actor="ci", query={"commit": "c2"})
    updated, hot = (after - earlier for after, earlier in zip(updates(), before, strict=True))
    assert updated == 1000
    assert hot >= 950
