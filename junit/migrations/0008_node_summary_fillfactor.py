"""On PostgreSQL, ``NodeSummary``'s pages are filled to 70% only: every upload updates the row
of each of its tests, and an update that finds room on its row's page, and changes no indexed
column, stays there (a HOT update): no new index entry, and the old version is cleared by
the next update of the page, without a vacuum. Pages written before keep their rows until
an update moves each to a page with room. Nothing on SQLite, which updates in place."""

from django.db import migrations

TABLE = 'junit_nodesummary'


def fillfactor(percent):
    def operation(apps, schema_editor):
        if schema_editor.connection.vendor == 'postgresql':
            schema_editor.execute(f'ALTER TABLE {TABLE} SET (fillfactor = {percent})')
    return operation


class Migration(migrations.Migration):

    dependencies = [
        ('junit', '0007_raw_rows_without_database_foreign_keys'),
    ]

    operations = [
        migrations.RunPython(fillfactor(70), fillfactor(100), elidable=False),
    ]
