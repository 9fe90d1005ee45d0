"""The mechanics of large uploads (``web.bulk``): the cycle collector paused for an ingest
and restored as it was found, whatever the order in which overlapping ingests end; and rows
read without the ORM's converters; rows updated each with its own values; and counts added
to the rows there are, the others inserted."""

from __future__ import annotations

import gc
import threading
from datetime import date

import pytest
from django.db import connection

from junit.ingest import junit_ingest
from junit.models import CaseResult, NodeDay
from ledger.models import Node
from runs.ingest import signals_ingest
from runs.wire import UploadInvalid
from tests.helpers import body, record
from tests.junit_files import junit_xml
from web import bulk
from web.bulk import cycle_collector_paused, plain_rows, update_rows


@pytest.fixture(autouse=True)
def collector_on():
    gc.enable()
    yield
    gc.enable()


def test_paused_inside_and_restored_after_even_on_error():
    with cycle_collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), cycle_collector_paused():
        raise RuntimeError("the ingest failed")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    with cycle_collector_paused():
        pass
    assert not gc.isenabled()


def test_overlapping_ingests_resume_it_when_the_last_ends():
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def first():
        with cycle_collector_paused():
            first_in.set()
            second_in.wait(5)
        seen["after_first"] = gc.isenabled()
        first_out.set()

    def second():
        first_in.wait(5)
        with cycle_collector_paused():
            second_in.set()
            first_out.wait(5)
            seen["second_alone"] = gc.isenabled()
        seen["after_second"] = gc.isenabled()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert seen == {"after_first": False, "second_alone": False, "after_second": True}


def test_an_ingest_leaves_the_collector_as_it_found_it(suite):
    signals_ingest(suite=suite, body=body([record("t.py::a")]), actor="ci")
    assert gc.isenabled()
    with pytest.raises(UploadInvalid):
        signals_ingest(suite=suite, body=body([record("t.py::a\x00")]), actor="ci")
    assert gc.isenabled()


def test_plain_rows_are_the_drivers_values(suite):
    signals_ingest(suite=suite, body=body([record("t.py::a"), record("t.py::b")]), actor="ci")
    rows = list(plain_rows(Node.objects.order_by("nodeid").values_list("nodeid", "pk"), 1))
    assert rows == list(Node.objects.order_by("nodeid").values_list("nodeid", "pk"))
    assert list(plain_rows(Node.objects.filter(pk__in=[]).values_list("pk"), 10)) == []


def test_update_rows_sets_each_row_its_own_values_in_every_chunk(suite, monkeypatch):
    """Rows found by a composite key (a result's file, position and day)."""
    monkeypatch.setattr(bulk, "UPDATE_ROWS", 2)  # five rows: three statements on PostgreSQL
    cases = [("tests.test_a", f"test_{i}", "passed") for i in range(6)]
    junit_ingest(suite=suite, body=junit_xml(*cases), actor="ci", query={"commit": "c0ffee"})
    *changed, untouched = CaseResult.objects.order_by("position")
    update_rows(CaseResult, ("passes", "failures", "message"),
                [(i, 10 * i, f"it's {{{i}}}", *result.pk) for i, result in enumerate(changed)])
    rows = {pk: rest for pk, *rest in CaseResult.objects.values_list(
        "pk", "passes", "failures", "message")}
    assert [rows[result.pk] for result in changed] == [
        [i, 10 * i, f"it's {{{i}}}"] for i in range(5)]
    assert rows[untouched.pk] == [1, 0, ""]


def test_update_rows_keeps_text_as_it_is_and_none_as_null(suite):
    """On PostgreSQL each column travels as one array: quotes, commas, braces and
    backslashes in a value, and None, come out as they went in."""
    signals_ingest(suite=suite, body=body([record(f"t.py::t{i}") for i in range(4)]),
                   actor="ci")
    pks = list(Node.objects.order_by("nodeid").values_list("pk", flat=True))
    texts = ['{"a,b}', "it's \\ NULL", None, ""]
    update_rows(Node, ("first_commit",), list(zip(texts, pks, strict=True)))
    assert list(Node.objects.order_by("nodeid").values_list("first_commit", flat=True)) == texts


def test_counts_added_adds_to_the_rows_there_are_and_inserts_the_others(suite):
    """Each row found by its fixed values and key gains the counts; a row of another key,
    or of other fixed values, is inserted with them; the rows not named stay as they were."""
    signals_ingest(suite=suite, body=body([record(f"t.py::t{i}") for i in range(3)]),
                   actor="ci")
    first, second, third = Node.objects.order_by("nodeid").values_list("pk", flat=True)
    day = date(2026, 12, 1)
    NodeDay.objects.create(suite=suite, node_id=first, day=day, branch="main", runs=5,
                           failures=1, flaky_failures=1, flaky_commits=1)
    NodeDay.objects.create(suite=suite, node_id=third, day=day, branch="main", runs=7)
    fixed = {"suite_id": suite.pk, "day": day, "branch": "main"}
    counts = ("runs", "failures", "flaky_failures", "flaky_commits")
    bulk.counts_added(NodeDay, fixed=fixed, key=("node_id",), counts=counts,
                      rows=[(first, 2, 2, 1, 0), (second, 3, 0, 0, 0)])
    bulk.counts_added(NodeDay, fixed={**fixed, "branch": "it's {a,b}"}, key=("node_id",),
                      counts=counts, rows=[(first, 1, 0, 0, 0)])
    assert sorted(NodeDay.objects.values_list("node_id", "branch", *counts)) == sorted([
        (first, "main", 7, 3, 2, 1), (second, "main", 3, 0, 0, 0),
        (third, "main", 7, 0, 0, 0), (first, "it's {a,b}", 1, 0, 0, 0)])


def test_counts_added_needs_a_unique_constraint_over_its_columns():
    """A table whose rows no unique constraint tells apart (a file's results) has no row
    to add to."""
    fixed = {"suite_id": 1, "file_id": 1, "day": date(2026, 12, 1), "position": 0,
             "outcome": "passed", "attempts": 1, "duration": None, "message": "",
             "signature": ""}
    with pytest.raises(ValueError, match="no unique constraint"):
        bulk.counts_added(CaseResult, fixed=fixed, key=("node_id",),
                          counts=("passes", "failures"), rows=[(1, 1, 0)])



TEXTS = ["0f3a9c", "tests/test_a.py::test_b[1]", "", "NULL", "null", "Null", "a,b",
         'say "hi"', "back\\slash", "two words", "tab\there", "{braces}", "naïve✓"]
PLAIN = {"0f3a9c", "tests/test_a.py::test_b[1]", "naïve✓"}  # no quotes needed


@pytest.mark.parametrize("values", [
    ["0f3a9c", "deadbeef"], TEXTS, *([text] for text in TEXTS), [7, 8, 9],
])
def test_an_array_parameter_reads_back_as_written(db, values):
    """``pg_array``: values whose text needs no quotes go as the array's text, the others
    through the driver; either way the database reads back what was written, in order
    (``one_parameter``: on SQLite a JSON array)."""
    cast = "bigint" if isinstance(values[0], int) else "text"
    parameter = bulk.one_parameter(values, cast)
    with connection.cursor() as cursor:
        cursor.execute(parameter.sql, parameter.params)
        assert [value for (value,) in cursor.fetchall()] == values
    plain = isinstance(values[0], int) or set(values) <= PLAIN | {"deadbeef"}
    assert isinstance(bulk.pg_array(values), str) == plain


def test_insert_plain_stores_every_value_as_given(suite):
    """On PostgreSQL COPY's binary format where every column allows (a result's), its text
    format where one does not (a summary's JSON): either way the values read back as
    given, text with tabs, newlines, backslashes and any character, and nulls."""
    from junit.ingest import RESULT_COLUMNS
    from junit.models import CaseResult, NodeSummary

    node = Node.objects.create(suite=suite, nodeid="tests/test_a.py::test_copy")
    file = junit_ingest(suite=suite, body=junit_xml(("tests.test_a", "test_b", "passed")),
                        actor="ci", query={"commit": "c1"}).file
    messages = ["tab\there", "line\nbreak", "back\\slash \\N", "naïve ✓ 𝄞", ""]
    rows = [(file.pk, node.pk, file.day, 100 + i, "failed", 3, 1, 2, i, [0.25, None][i % 2],
             message, f"sig {i}") for i, message in enumerate(messages)]
    bulk.insert_plain(CaseResult, RESULT_COLUMNS, rows)
    stored = CaseResult.objects.filter(file=file, position__gte=100).order_by("position")
    assert list(stored.values_list(*RESULT_COLUMNS)) == rows
    summary = ("suite_id", "node_id", "runs", "failures", "flaky_failures", "flaky_commits",
               "first_flaky", "last_flaky", "spark")
    if connection.vendor == "postgresql":
        assert bulk._binary_types(CaseResult, RESULT_COLUMNS) is not None
        assert bulk._binary_types(NodeSummary, summary) is None  # its spark is JSON
    bulk.insert_plain(NodeSummary, summary,
                      [(suite.pk, node.pk, 5, 2, 2, 1, date(2026, 3, 1), None, "[0, 2]")])
    assert NodeSummary.objects.filter(node=node).values_list(
        "runs", "first_flaky", "last_flaky", "spark").get() == (5, date(2026, 3, 1), None,
                                                               [0, 2])
