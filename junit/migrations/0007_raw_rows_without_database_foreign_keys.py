"""The raw rows (``CaseResult``, ``JobOutcome``) lose their database foreign keys: PostgreSQL
checked each at the upload's commit, a query and a lock on the parent row a key, for the
20,000 to 30,000 rows of a 10,000-test file. Deleting their suite, node or file still deletes
them, through Django's ``CASCADE`` (``junit.models.RawRow``). On SQLite each table is copied
into a new one without the keys."""

import django.db.models.deletion
from django.db import migrations, models


def key(to, related_name='+'):
    """A foreign key of a raw row, with no constraint in the database."""
    return models.ForeignKey(db_constraint=False, db_index=False,
                             on_delete=django.db.models.deletion.CASCADE,
                             related_name=related_name, to=to)


class Migration(migrations.Migration):

    dependencies = [
        ('junit', '0001_squashed_0006_node_summary'),
    ]

    operations = [
        migrations.AlterField(model_name='caseresult', name='file',
                              field=key('junit.junitfile', related_name='results')),
        migrations.AlterField(model_name='caseresult', name='node', field=key('ledger.node')),
        migrations.AlterField(model_name='caseresult', name='suite', field=key('ledger.suite')),
        migrations.AlterField(model_name='joboutcome', name='node', field=key('ledger.node')),
        migrations.AlterField(model_name='joboutcome', name='suite', field=key('ledger.suite')),
    ]
