"""The nodes known from JUnit results before first commits were kept have evidence from
before: "" (rules.BEFORE_RECORD), never new again (ledger's 0014 adds the field)."""

from django.db import migrations
from django.db.models import Exists, OuterRef


def known_from_junit(apps, schema_editor):
    Node = apps.get_model("ledger", "Node")
    NodeDay = apps.get_model("junit", "NodeDay")
    CaseResult = apps.get_model("junit", "CaseResult")
    Node.objects.filter(first_commit__isnull=True).filter(
        Exists(NodeDay.objects.filter(node=OuterRef("pk")))
        | Exists(CaseResult.objects.filter(node=OuterRef("pk")))
    ).update(first_commit="")


class Migration(migrations.Migration):

    dependencies = [
        ("junit", "0002_flaky_days_index"),
        ("ledger", "0014_node_first_commit"),
    ]

    operations = [
        migrations.RunPython(known_from_junit, migrations.RunPython.noop, elidable=True),
    ]
