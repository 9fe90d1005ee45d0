"""Each node's written form's key (``Node.written_key``), filled for the nodes there are,
then indexed: a JUnit file's testcases find their nodes by it."""

from django.db import migrations, models

import ledger.models

BATCH = 2_000


def fill_written_keys(apps, schema_editor):
    from web.bulk import update_rows

    node_model = apps.get_model("ledger", "Node")
    rows = node_model.objects.order_by("pk").values_list("pk", "nodeid")
    last = 0
    while batch := list(rows.filter(pk__gt=last)[:BATCH]):
        update_rows(node_model, ("written_key",),
                    [(ledger.models.node_written_key(nodeid), pk) for pk, nodeid in batch])
        last = batch[-1][0]


class Migration(migrations.Migration):

    dependencies = [
        ('ledger', '0022_suite_junit_summary_day'),
    ]

    operations = [
        migrations.AddField(
            model_name='node',
            name='written_key',
            field=ledger.models.WrittenKeyField(default='', editable=False, max_length=32,
                                                source='nodeid'),
            preserve_default=False,
        ),
        migrations.RunPython(fill_written_keys, migrations.RunPython.noop, elidable=True),
        migrations.AddIndex(
            model_name='node',
            index=models.Index(fields=['suite', 'written_key'], name='node_suite_written'),
        ),
    ]
