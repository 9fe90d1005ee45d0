"""Each node's first evidence commit (rules.is_new). Nodes a gate upload named before it
was kept have evidence from before: "" (rules.BEFORE_RECORD), never new again. Nodes known
from JUnit only are settled by junit's 0003."""

from django.db import migrations, models


def known_before(apps, schema_editor):
    Node = apps.get_model("ledger", "Node")
    Node.objects.filter(first_seen__isnull=False).update(first_commit="")


class Migration(migrations.Migration):

    dependencies = [
        ("ledger", "0013_job_locks"),
    ]

    operations = [
        migrations.AddField(
            model_name="node",
            name="first_commit",
            field=models.CharField(blank=True, max_length=200, null=True),
        ),
        migrations.RunPython(known_before, migrations.RunPython.noop, elidable=True),
    ]
