"""On PostgreSQL, ``NodeDay``'s pages are filled to 70% only, as ``NodeSummary``'s (0008): a
test's row of the day is updated by every later file of the day that ran it, and an update
that finds room on its row's page and changes no indexed column (its runs and failures are
in no index; its flaky failures are in two indexes' conditions) stays there, a HOT update:
no new entry in the table's four indexes. Pages written before keep their rows until an
update moves each to a page with room. Nothing on SQLite, which updates in place."""

from django.db import migrations

TABLE = 'junit_nodeday'


def room_kept(apps, schema_editor):
    _fill_pages_to(schema_editor, 70)


def pages_filled(apps, schema_editor):
    _fill_pages_to(schema_editor, 100)


def _fill_pages_to(schema_editor, percent):
    if schema_editor.connection.vendor == 'postgresql':
        schema_editor.execute(f'ALTER TABLE {TABLE} SET (fillfactor = {percent})')


class Migration(migrations.Migration):

    dependencies = [
        ('junit', '0011_raw_rows_keyed_by_their_place'),
    ]

    operations = [
        migrations.RunPython(room_kept, pages_filled, elidable=False),
    ]
