"""On SQLite a test's results are indexed by day, then node (``junit.models.NodeResultsIndex``):
an upload wrote one entry a test at that test's place in an index of every result, which
dirtied most of the index's pages at every upload, and the WAL carried them all (about a
third of a 10,000-test file's ingest in bench B7, its commit's checkpoint most of it). The
index keeps its name; PostgreSQL, where each day's partition has an index of its own, keeps
it as it is. A node's results are read, and deleted with it, on the days of the files there
are (``junit.models.node_results``, ``cascade_by_day``)."""

from django.db import migrations, models

import junit.models

BY_NODE = models.Index(fields=['node', '-day'], name='caseresult_node_recent')
BY_DAY = junit.models.NodeResultsIndex(fields=['node', '-day'], name='caseresult_node_recent')


def _swap(old, new):
    def swap(apps, schema_editor):
        if schema_editor.connection.vendor != 'sqlite':
            return
        results = apps.get_model('junit', 'CaseResult')
        schema_editor.remove_index(results, old)
        schema_editor.add_index(results, new)
    return swap


class Migration(migrations.Migration):

    dependencies = [
        ('junit', '0015_rollups_without_database_keys'),
        ('ledger', '0001_squashed_0023_node_written_key'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveIndex(model_name='caseresult', name='caseresult_node_recent'),
                migrations.AlterField(
                    model_name='caseresult', name='node', field=models.ForeignKey(
                        db_constraint=False, db_index=False,
                        on_delete=junit.models.cascade_by_day, related_name='+',
                        to='ledger.node')),
                migrations.AddIndex(model_name='caseresult', index=BY_DAY),
            ],
            database_operations=[migrations.RunPython(_swap(BY_NODE, BY_DAY),
                                                      _swap(BY_DAY, BY_NODE))],
        ),
    ]
