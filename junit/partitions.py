"""On PostgreSQL the testcase results (``CaseResult``) are a table partitioned by day
(``RANGE (day)``, migration 0009): a partition a day, named ``junit_caseresult_pYYYYMMDD``,
made by the first upload of its day, and dropped whole by the prune once the day is past
the retention (``junit.prune``), instead of deleting its rows. A result's key,
``(file, position, day)``, is no index here (migration 0014): a file's rows are found by a
plain index of the file, and nothing refers to a result by a foreign key. A partition is
made like the parent, whose columns are in the order that leaves no padding. SQLite keeps
one plain table, its old rows deleted, and its key.

There is no default partition: a row of a day with no partition is refused, so every
writer of results makes its day's partition first (``day_partition``), and a partition is
detached without the parent's exclusive lock (``DETACH … CONCURRENTLY`` cannot run while a
default partition exists).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, timedelta

from django.db import DatabaseError, connection, transaction

TABLE = "junit_caseresult"
PREFIX = f"{TABLE}_p"
DUPLICATE_TABLE, UNIQUE_VIOLATION = "42P07", "23505"


def partitioned() -> bool:
    return connection.vendor == "postgresql"


def partition_name(day: date) -> str:
    return f"{PREFIX}{day:%Y%m%d}"


def create_sql(day: date) -> list[str]:
    """The statements making ``day``'s partition (names and bounds written from a date): a
    table like the parent, then attached to it. Attaching takes the parent's ``SHARE UPDATE
    EXCLUSIVE`` lock, which reads and writes of the results do not wait for, where ``CREATE
    TABLE … PARTITION OF`` takes its ``ACCESS EXCLUSIVE``, which would queue every upload
    and read of the results behind the longest read running."""
    name, end = partition_name(day), day + timedelta(days=1)
    return [f"CREATE TABLE {name} (LIKE {TABLE} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)",
            f"ALTER TABLE {TABLE} ATTACH PARTITION {name} "
            f"FOR VALUES FROM ('{day.isoformat()}') TO ('{end.isoformat()}')"]


def day_partition(day: date) -> None:
    """Make ``day``'s partition unless it exists: one catalog lookup when it does. It is
    made in a transaction (or savepoint) of its own, so that no lock it takes is held
    through the caller's writes. Two uploads making the same new day at once both go on:
    the one whose ``CREATE`` comes second waits for the first's transaction, then finds
    the table made (``duplicate_table``, or a catalog key's ``unique_violation``)."""
    if not partitioned():
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [partition_name(day)])
        if cursor.fetchone()[0]:
            return
        try:
            with transaction.atomic():
                for statement in create_sql(day):
                    cursor.execute(statement)
        except DatabaseError as error:
            if getattr(error.__cause__, "sqlstate", None) not in (DUPLICATE_TABLE,
                                                                  UNIQUE_VIOLATION):
                raise


def partition_days() -> list[date]:
    """The days of the partitions there are, oldest first: attached ones, and ones a prune
    detached but did not drop (it was stopped between the two)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname FROM pg_class WHERE relkind = 'r' AND relname LIKE %s "
            "AND relnamespace = current_schema()::regnamespace", [f"{PREFIX}%"])
        names = [name for (name,) in cursor.fetchall()]
    return sorted(date(int(n[-8:-4]), int(n[-4:-2]), int(n[-2:])) for n in names
                  if n[len(PREFIX):].isdigit() and len(n) == len(PREFIX) + 8)


def rows_of(days: Iterable[date]) -> int:
    """The rows the partitions of ``days`` hold."""
    counts = [f"SELECT count(*) FROM {partition_name(day)}" for day in days]  # noqa: S608
    if not counts:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(counts))
        return sum(count for (count,) in cursor.fetchall())


def drop_partition(day: date) -> int:
    """Drop ``day``'s partition and answer the rows it held. Outside a transaction it is
    detached ``CONCURRENTLY`` first, so that uploads and reads of other days go on while it
    waits for the queries that still read it; inside one (a test's) it is dropped with the
    parent's exclusive lock."""
    name = partition_name(day)
    rows = rows_of([day])
    with connection.cursor() as cursor:
        if not connection.in_atomic_block:
            cursor.execute(
                "SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = to_regclass(%s)",
                [name])
            attached = cursor.fetchone()
            if attached is not None:
                # A detach a stopped prune left pending is finished, not started again.
                finish = " FINALIZE" if attached[0] else " CONCURRENTLY"
                cursor.execute(f"ALTER TABLE {TABLE} DETACH PARTITION {name}{finish}")
        cursor.execute(f"DROP TABLE {name}")
    return rows
