"""Plain-tuple inserts and updates for an upload's rows: ``COPY`` on PostgreSQL, one prepared
statement run for every row (``executemany``) on SQLite. No model instance per row, no
per-value field preparation: the caller gives values the database takes as they are.
"""

from __future__ import annotations

import gc
import itertools
import json
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models.expressions import RawSQL

UPDATE_ROWS = 20_000  # rows per UPDATE on PostgreSQL (an array a column: a bounded statement)
SQLITE_IDS = 10_000  # ids per statement on SQLite, far under its variable limit (32,766)


def columns_of(model, attnames: Sequence[str]) -> list[str]:
    """The database columns of ``attnames``; every concrete field but the primary key must
    be named, so a new field cannot be left out of the insert."""
    fields = {f.attname: f for f in model._meta.concrete_fields if not f.primary_key}
    missing = sorted(set(fields) - set(attnames))
    unknown = sorted(set(attnames) - set(fields))
    if missing or unknown:
        raise ValueError(f"{model.__name__}: columns missing {missing}, unknown {unknown}")
    return [fields[name].column for name in attnames]


# The column types whose values ``insert_plain`` sends to PostgreSQL in COPY's binary
# format, each from the Python type Django's own rows hold (int, float, str, bool, date).
BINARY_TYPES = frozenset(("bigint", "integer", "smallint", "real", "double precision",
                          "date", "varchar", "text", "boolean"))


def _binary_types(model, attnames: Sequence[str]) -> list[str] | None:
    """The columns' types, when COPY can take every one of them in binary."""
    types = [re.sub(r"\(.*\)$", "", model._meta.get_field(name).db_type(connection) or "")
             for name in attnames]
    return types if set(types) <= BINARY_TYPES else None


def insert_plain(model, attnames: Sequence[str], rows: Iterable[tuple]) -> None:
    """Insert ``rows`` (tuples in the order of ``attnames``) into ``model``'s table, inside
    the caller's transaction. On PostgreSQL one COPY, in binary when every column's type
    allows (a third of the text format's time for a 10,000-test JUnit file's results: no
    value written as text and read back)."""
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    columns = ", ".join(quote(c) for c in columns_of(model, attnames))
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            types = _binary_types(model, attnames)
            binary = " (FORMAT BINARY)" if types else ""
            with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN{binary}") as copy:
                if types:
                    copy.set_types(types)
                for row in rows:
                    copy.write_row(row)
        else:
            marks = ", ".join(["%s"] * len(attnames))
            # Names from the model's own meta, quoted; the values are parameters.
            sql = f"INSERT INTO {table} ({columns}) VALUES ({marks})"  # noqa: S608
            cursor.executemany(sql, rows if isinstance(rows, list) else list(rows))


INSERT_CHUNK = 10_000  # rows per insert statement or COPY


def insert_chunked(model, attnames: Sequence[str], rows: Sequence[tuple]) -> None:
    """``insert_plain`` of ``rows``, ``INSERT_CHUNK`` a statement: a large upload's rows
    never make one statement of unbounded size."""
    for start in range(0, len(rows), INSERT_CHUNK):
        insert_plain(model, attnames, rows[start : start + INSERT_CHUNK])


# A character that makes an array element's text need quotes (PostgreSQL's array input).
_QUOTED = re.compile(r'[{}",\\\s]')


def pg_array(values: Iterable) -> list | str:
    """A column's values as one PostgreSQL array parameter. Integers, and strings no
    element of which needs quotes (keys in hex, say), travel as the array's text, written
    in one join: the driver's array dumper takes each value in turn (a regular expression
    a string), about a tenth of a 10,000-test JUnit file's CPU. Other values go through
    the driver."""
    values = list(values)
    types = set(map(type, values))
    if types == {int}:
        return "{" + ",".join(map(str, values)) + "}"
    if types == {str} and not _QUOTED.search("".join(values)) and all(values) and not any(
            len(value) == 4 and value.upper() == "NULL" for value in values):
        return "{" + ",".join(values) + "}"
    return values


def one_parameter(values: Iterable, cast: str = "text") -> RawSQL:
    """``values`` as one query parameter, for an ``__in`` filter of many: PostgreSQL's
    ``unnest`` of an array (of ``cast``), SQLite's ``json_each`` of a JSON array. A
    parameter a value costs more to build and bind than the lookups it serves (10,000
    node keys: twice the time)."""
    if connection.vendor == "postgresql":
        # The values are the parameter; ``cast`` is a type name the calling code writes.
        return RawSQL(f"SELECT unnest(%s::{cast}[])", [pg_array(values)])  # noqa: S611
    return RawSQL("SELECT value FROM json_each(%s)", [json.dumps(list(values))])


def plain_rows(queryset, chunk_size: int) -> Iterator[tuple]:
    """The rows of a ``values_list`` queryset as the driver gives them, without the ORM's
    converter call per value: for columns that need none (ints, text, and flags read by
    their truth, which SQLite gives as 0 or 1)."""
    try:
        sql, params = queryset.query.sql_with_params()
    except EmptyResultSet:  # a filter that matches nothing, such as an empty ``__in``
        return
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(chunk_size):
            yield from rows


def update_pks(model, pks: Sequence[int], **values) -> None:
    """Set ``values`` on the rows whose primary keys are ``pks``, with a fixed number of
    parameters per statement: one array on PostgreSQL, chunks of ids on SQLite."""
    if not pks:
        return
    quote = connection.ops.quote_name
    meta = model._meta
    assignments = ", ".join(f"{quote(meta.get_field(name).column)} = %s" for name in values)
    prepared = [meta.get_field(name).get_db_prep_save(value, connection)
                for name, value in values.items()]
    table, pk = quote(meta.db_table), quote(meta.pk.column)
    update = f"UPDATE {table} SET {assignments} WHERE {pk}"  # noqa: S608 (names, quoted)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"{update} = ANY(%s::{meta.pk.db_type(connection)}[])",
                           [*prepared, pg_array(pks)])
            return
        for start in range(0, len(pks), SQLITE_IDS):
            chunk = list(pks[start : start + SQLITE_IDS])
            marks = ", ".join(["%s"] * len(chunk))
            cursor.execute(f"{update} IN ({marks})", [*prepared, *chunk])


def update_rows(model, attnames: Sequence[str], rows: list[tuple]) -> None:
    """Set ``attnames`` on many rows, each its own values: ``rows`` are tuples of the
    values in the order of ``attnames``, then the row's primary key (its fields' values, in
    order, for a composite one). On PostgreSQL, one ``UPDATE … FROM unnest(…)`` per
    UPDATE_ROWS rows, a parameter per column (an array of its values): a statement a row
    cost a quarter of a large upload, and a statement of a parameter a value most of its
    time in the driver's reading of the statement's text; on SQLite, one prepared
    statement run for every row."""
    if not rows:
        return
    quote = connection.ops.quote_name
    meta = model._meta
    fields, key = [meta.get_field(name) for name in attnames], meta.pk_fields
    table = quote(meta.db_table)
    if connection.vendor == "postgresql":
        every = (*fields, *key)
        arrays = ", ".join(f"%s::{field.db_type(connection)}[]" for field in every)
        names = ", ".join(quote(f"v_{field.column}") for field in every)
        sets = ", ".join(f"{quote(field.column)} = v.{quote('v_' + field.column)}"
                         for field in fields)
        match = " AND ".join(f"{table}.{quote(field.column)} = v.{quote('v_' + field.column)}"
                             for field in key)
        with connection.cursor() as cursor:
            for start in range(0, len(rows), UPDATE_ROWS):
                columns = [pg_array(column) for column in zip(*rows[start:start + UPDATE_ROWS],
                                                          strict=True)]
                cursor.execute(f"UPDATE {table} SET {sets} FROM unnest({arrays}) "  # noqa: S608
                               f"AS v({names}) WHERE {match}", columns)
        return
    assignments = ", ".join(f"{quote(field.column)} = %s" for field in fields)
    match = " AND ".join(f"{quote(field.column)} = %s" for field in key)
    with connection.cursor() as cursor:
        cursor.executemany(f"UPDATE {table} SET {assignments} WHERE {match}",  # noqa: S608
                           rows)


def _unique_over(model, attnames: Sequence[str]) -> list[str]:
    """The fields (attnames, in order) of ``model``'s unique constraint that is over
    ``attnames`` alone."""
    meta = model._meta
    named = set(attnames)
    for constraint in meta.constraints:
        fields = [meta.get_field(name).attname for name in getattr(constraint, "fields", ())]
        if fields and getattr(constraint, "condition", None) is None and set(fields) <= named:
            return fields
    raise ValueError(f"{model.__name__}: no unique constraint over {sorted(named)}")


def counts_added(model, *, fixed: dict, key: Sequence[str], counts: Sequence[str],
                 rows: Sequence[tuple]) -> None:
    """Add counts to ``model``'s rows, each found by ``fixed`` and its key (``model``'s
    unique constraint over them), and insert the rows there are not. ``rows`` are tuples of
    the values of ``key`` then of ``counts``; ``fixed`` holds the values every row has
    (the other columns of an inserted row). No row is read first: one
    ``INSERT … ON CONFLICT … DO UPDATE``, run for every row on SQLite, and sent as an
    array a column on PostgreSQL; or, when no row has the fixed values that lead the
    constraint (one probe of its index), ``insert_plain``. The caller holds the lock its
    rows' writers take (the suite's), so no row comes between the probe and the insert."""
    if not rows:
        return
    unique = _unique_over(model, (*fixed, *key))
    leading = list(itertools.takewhile(fixed.__contains__, unique))
    if leading and not model._default_manager.filter(
            **{name: fixed[name] for name in leading}).exists():
        # No row shares the fixed values that lead the constraint (a day's first file): a
        # plain insert, without a conflict check a row.
        insert_plain(model, (*fixed, *key, *counts), [(*fixed.values(), *row) for row in rows])
        return
    quote = connection.ops.quote_name
    meta = model._meta
    table = quote(meta.db_table)
    columns = ", ".join(quote(c) for c in columns_of(model, (*fixed, *key, *counts)))
    target = ", ".join(quote(meta.get_field(name).column) for name in unique)
    adds = ", ".join(f"{quote(column)} = {table}.{quote(column)} + excluded.{quote(column)}"
                     for column in (meta.get_field(name).column for name in counts))
    conflict = f"ON CONFLICT ({target}) DO UPDATE SET {adds}"
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            def cast(name):
                return f"%s::{meta.get_field(name).db_type(connection)}"

            constants = ", ".join(cast(name) for name in fixed)
            arrays = ", ".join(f"{cast(name)}[]" for name in (*key, *counts))
            # Names from the model's own meta, quoted, and its columns' types; the values
            # are parameters.
            cursor.execute(
                f"INSERT INTO {table} ({columns}) SELECT {constants}, v.* "  # noqa: S608
                f"FROM unnest({arrays}) AS v {conflict}",
                [*fixed.values(), *(pg_array(column) for column in zip(*rows, strict=True))])
            return
        marks = ", ".join(["%s"] * (len(fixed) + len(key) + len(counts)))
        constants = tuple(fixed.values())
        cursor.executemany(
            f"INSERT INTO {table} ({columns}) VALUES ({marks}) {conflict}",  # noqa: S608
            [constants + row for row in rows])


class _CyclePause:
    """Counts the ingests in this process that pause the cycle collector, so that the last
    to end restores it as the first found it, whatever the threads' order."""

    lock = threading.Lock()
    holders = 0
    was_enabled = False


@contextmanager
def cycle_collector_paused():
    """Run a large upload without Python's cycle collector.

    An upload makes and drops millions of small objects (records, rows, answers), freed by
    reference counting, none in a cycle that must go before the upload ends. The collector
    still walks every live object each time enough of them were made, again and again
    (about a tenth of a 100,000-record ingest). It is resumed when the last ingest running
    in this process ends.
    """
    with _CyclePause.lock:
        if _CyclePause.holders == 0:
            _CyclePause.was_enabled = gc.isenabled()
            gc.disable()
        _CyclePause.holders += 1
    try:
        yield
    finally:
        with _CyclePause.lock:
            _CyclePause.holders -= 1
            if _CyclePause.holders == 0 and _CyclePause.was_enabled:
                gc.enable()
