"""The testcase results take fewer bytes a row. A result's attempts, passes and failures
become 2-byte counts (a file's test has at most ``junit.rules.ATTEMPTS_MAX`` attempts) and
its duration a 4-byte ``real``.

On PostgreSQL the partitioned table is made again, its columns in the order that leaves no
padding between them (8-byte values, then 4-byte, then 2-byte, then text), and each day's
partition is written again into it: a row of 76 bytes with its pointer where it took 101.
The key ``(file, position, day)`` is no longer an index there: a file's rows are written
once, by its upload, and found by a plain index of the file, whose entries a file's rows
share (a B-tree's deduplication), about 7 bytes a row where the key's took 32. The node's
index is made again as it was. Backwards, the same into the columns, key and index as they
were. The rows are kept both ways (a count past 2 bytes as 32,767); the time it takes grows
with the raw rows kept (a prune first makes it shorter).

On SQLite the fields are altered as Django alters them: its values are stored as they
come, whatever the declared type."""

from datetime import date, timedelta

from django.db import migrations, models

import junit.models

TABLE = 'junit_caseresult'
OLD = f'{TABLE}_old'
NODE_INDEX = f'CREATE INDEX caseresult_node_recent ON {TABLE} (node_id, day DESC)'
COUNTS = ('position', 'attempts', 'passes', 'failures', 'flaky_failures')  # checked >= 0
# The columns as 0013 left them, and as they become.
COLUMNS_0013 = (('day', 'date'), ('position', 'integer'), ('outcome', 'varchar(7)'),
                ('attempts', 'integer'), ('passes', 'integer'), ('failures', 'integer'),
                ('duration', 'double precision'), ('message', 'varchar(500)'),
                ('signature', 'varchar(200)'), ('node_id', 'bigint'), ('file_id', 'bigint'),
                ('flaky_failures', 'integer'))
COLUMNS_0014 = (('file_id', 'bigint'), ('node_id', 'bigint'), ('day', 'date'),
                ('position', 'integer'), ('duration', 'real'), ('flaky_failures', 'integer'),
                ('attempts', 'smallint'), ('passes', 'smallint'), ('failures', 'smallint'),
                ('outcome', 'varchar(7)'), ('message', 'varchar(500)'),
                ('signature', 'varchar(200)'))
NAMES = [f'"{name}"' for name, _ in COLUMNS_0014]


def definitions(columns):
    """The columns as Django makes them: NOT NULL but the duration, each count's check
    under Django's name."""
    return ', '.join(
        f'"{name}" {kind}' + ('' if name == 'duration' else ' NOT NULL')
        + (f' CONSTRAINT {TABLE}_{name}_check CHECK ("{name}" >= 0)' if name in COUNTS else '')
        for name, kind in columns)


# Forwards, a count past 2 bytes (a file repeating a test more than 32,767 times, which
# the upload now refuses) is kept as 32,767. Backwards, a real is read back as the
# shortest text that gives it again: 0.05, not 0.0500000007.
NARROWER = {f'"{name}"': f'LEAST({name}, 32767)' for name in ('attempts', 'passes', 'failures')}
WIDER = {'"duration"': 'duration::text::double precision'}


def rebuild(columns, indexes, values=None):
    """The partitioned table made again with ``columns``, each attached partition's rows
    copied into a partition of the same day, then ``indexes`` made on the whole."""
    def operation(apps, schema_editor):
        if schema_editor.connection.vendor != 'postgresql':
            return
        run = schema_editor.execute
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                "WHERE i.inhparent = %s::regclass ORDER BY c.relname", [TABLE])
            partitions = [name for (name,) in cursor.fetchall()]
        run('DROP INDEX IF EXISTS caseresult_node_recent')
        run(f'ALTER TABLE {TABLE} RENAME TO {OLD}')
        run(f'CREATE TABLE {TABLE} ({definitions(columns)}) PARTITION BY RANGE (day)')
        names = ', '.join(NAMES)
        selected = ', '.join((values or {}).get(name, name) for name in NAMES)
        for name in partitions:
            day = name.removeprefix(f'{TABLE}_p')
            start = date(int(day[:4]), int(day[4:6]), int(day[6:]))
            end = start + timedelta(days=1)
            run(f'ALTER TABLE {name} RENAME TO {OLD}_p{day}')
            run(f"CREATE TABLE {name} PARTITION OF {TABLE} "
                f"FOR VALUES FROM ('{start.isoformat()}') TO ('{end.isoformat()}')")
            run(f'INSERT INTO {name} ({names}) SELECT {selected} FROM {OLD}_p{day}')  # noqa: S608
            run(f'DROP TABLE {OLD}_p{day}')
        run(f'DROP TABLE {OLD}')
        for index in indexes:
            run(index)
    return operation


class OffPostgres(migrations.AlterField):
    """The field altered in Django's state everywhere, and in the database on SQLite only:
    on PostgreSQL ``rebuild`` makes the table."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor != 'postgresql':
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor != 'postgresql':
            super().database_backwards(app_label, schema_editor, from_state, to_state)


class Migration(migrations.Migration):

    dependencies = [
        ('junit', '0013_job_counts_read_from_results'),
    ]

    operations = [
        OffPostgres(model_name='caseresult', name='attempts',
                    field=models.PositiveSmallIntegerField(default=1)),
        OffPostgres(model_name='caseresult', name='passes',
                    field=models.PositiveSmallIntegerField(default=0)),
        OffPostgres(model_name='caseresult', name='failures',
                    field=models.PositiveSmallIntegerField(
                        default=0, help_text='Failed or error attempts.')),
        OffPostgres(model_name='caseresult', name='duration',
                    field=junit.models.RealField(blank=True, help_text='Seconds, all attempts.',
                                                 null=True)),
        migrations.RunPython(
            rebuild(COLUMNS_0014,
                    [NODE_INDEX, f'CREATE INDEX caseresult_file ON {TABLE} (file_id)'],
                    NARROWER),
            rebuild(COLUMNS_0013, [
                NODE_INDEX, f'ALTER TABLE {TABLE} ADD CONSTRAINT {TABLE}_pkey '
                'PRIMARY KEY (file_id, "position", day)'], WIDER),
            elidable=False),
    ]
