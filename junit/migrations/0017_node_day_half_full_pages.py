"""On PostgreSQL, ``NodeDay``'s pages are filled to 50% only (0012 kept 30% free): a day's
rows are inserted by its first file and updated by each later one, and the first of those
updates finds room on the row's page only when the page has room for a second copy of
each of its rows; with 30% free, fewer than half of a day's second file's updates stayed
on their page (bench B7), the others writing an entry in each of the table's indexes. Later
updates of the day find the room the earlier ones' dead copies leave once pruned. Pages
written before keep their rows."""

from django.db import migrations

TABLE = 'junit_nodeday'


def _fill_pages_to(percent):
    def fill(apps, schema_editor):
        if schema_editor.connection.vendor == 'postgresql':
            schema_editor.execute(f'ALTER TABLE {TABLE} SET (fillfactor = {percent})')
    return fill


class Migration(migrations.Migration):

    dependencies = [
        ('junit', '0016_node_results_by_day_on_sqlite'),
    ]

    operations = [
        migrations.RunPython(_fill_pages_to(50), _fill_pages_to(70), elidable=False),
    ]
