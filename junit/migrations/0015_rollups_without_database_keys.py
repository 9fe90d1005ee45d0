"""The rollups (``NodeDay``, ``SignatureDay``, ``NodeSummary``, ``SignatureSummary``) lose
their database foreign keys, as the raw rows did (0007): PostgreSQL checked the two of each
row inserted at the commit, a query and a row lock each, 20,000 for a day's first
10,000-test file (about 50 ms of its commit, bench B7). Django's ``CASCADE`` still deletes
them with their suite or node. On SQLite each table is copied into one without the keys."""

import django.db.models.deletion
from django.db import migrations, models


def key(to):
    """A foreign key of a rollup, with no constraint in the database."""
    return models.ForeignKey(db_constraint=False, db_index=False,
                             on_delete=django.db.models.deletion.CASCADE, related_name='+',
                             to=to)


class Migration(migrations.Migration):

    dependencies = [
        ('junit', '0014_case_results_narrower'),
        ('ledger', '0001_squashed_0023_node_written_key'),
    ]

    operations = [
        migrations.AlterField(model_name=model, name=name, field=key(f'ledger.{name}'))
        for model in ('nodeday', 'signatureday', 'nodesummary', 'signaturesummary')
        for name in ('node', 'suite')
    ]
