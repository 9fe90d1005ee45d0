"""On PostgreSQL, ``junit_caseresult`` becomes a table partitioned by ``RANGE (day)``, a
partition a day (``junit.partitions``), so that the prune drops a day's partition instead of
deleting its rows. The rows are kept: the table is renamed, a partitioned one made like it
(its columns, defaults, checks and identity), a partition made for each day it holds, the
rows copied, the identity's sequence carried on, the old table dropped; then the primary key,
now ``(id, day)`` as a partitioned table's unique keys must hold its partition key, and the
model's indexes. Backwards, the same into a plain table keyed by ``id``. Django's state does
not change: it still reads ``id`` as the key. Nothing on SQLite."""

from datetime import timedelta

from django.db import migrations

TABLE = 'junit_caseresult'
OLD = f'{TABLE}_old'


def create_sql(day):
    """A day's partition, named as junit.partitions names it."""
    return (f"CREATE TABLE IF NOT EXISTS {TABLE}_p{day:%Y%m%d} PARTITION OF {TABLE} "
            f"FOR VALUES FROM ('{day.isoformat()}') TO ('{(day + timedelta(days=1)).isoformat()}')")


def rebuild(partition):
    def operation(apps, schema_editor):
        if schema_editor.connection.vendor != 'postgresql':
            return
        model = apps.get_model('junit', 'CaseResult')
        run = schema_editor.execute
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(f"SELECT pg_get_serial_sequence('{TABLE}', 'id')")
            (old_sequence,) = cursor.fetchone()
            run(f'ALTER TABLE {TABLE} RENAME TO {OLD}')
            run(f'ALTER SEQUENCE {old_sequence} RENAME TO {OLD}_id_seq')
            run(f'CREATE TABLE {TABLE} (LIKE {OLD} INCLUDING ALL EXCLUDING INDEXES)'
                + (' PARTITION BY RANGE (day)' if partition else ''))
            if partition:
                cursor.execute(f'SELECT DISTINCT day FROM {OLD}')  # noqa: S608
                for (day,) in cursor.fetchall():
                    run(create_sql(day))
            run(f'INSERT INTO {TABLE} SELECT * FROM {OLD}')  # noqa: S608 (same columns)
            cursor.execute(f"SELECT pg_get_serial_sequence('{TABLE}', 'id')")
            (sequence,) = cursor.fetchone()
            cursor.execute(f'SELECT setval(%s, last_value, is_called) FROM {OLD}_id_seq',  # noqa: S608
                           [sequence])
            run(f'DROP TABLE {OLD} CASCADE')
        key = '(id, day)' if partition else '(id)'
        run(f'ALTER TABLE {TABLE} ADD CONSTRAINT {TABLE}_pkey PRIMARY KEY {key}')
        for index in model._meta.indexes:
            schema_editor.add_index(model, index)
    return operation


class Migration(migrations.Migration):

    dependencies = [
        ('junit', '0008_node_summary_fillfactor'),
    ]

    operations = [
        migrations.RunPython(rebuild(partition=True), rebuild(partition=False), elidable=False),
    ]
