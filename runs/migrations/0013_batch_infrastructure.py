"""A gate attempt's infrastructure failure (its failing share, or every failure with one
signature: flakeboard/rules/infrastructure.py), each failed record's failure signature, and
a measurement's diagnosis experiments."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("runs", "0001_squashed_0012_impact_map")]
    operations = [
        migrations.AddField(
            model_name="verdictbatch",
            name="failing_share",
            field=models.FloatField(default=0.0, help_text="Of the nodes this attempt sent that ran (passed or failed), the share that failed."),
        ),
        migrations.AddField(
            model_name="verdictbatch",
            name="infrastructure",
            field=models.BooleanField(default=False, help_text="More than the suite's infrastructure share of the nodes this attempt ran failed, or every failure, at least 3, carried one signature: its runner broke. Its failures count for the verdict, and are never flaky evidence."),
        ),
        migrations.AddField(
            model_name="verdictbatch",
            name="infrastructure_signature",
            field=models.CharField(blank=True, default="", db_default="", help_text="The one failure signature that made this attempt an infrastructure failure (empty: none did).", max_length=200),
        ),
        migrations.AddField(
            model_name="nodeverdict",
            name="failure_signature",
            field=models.CharField(blank=True, default="", db_default="", help_text="A failed record's failure signature, as the client's gate sent it.", max_length=200),
        ),
        migrations.AddField(
            model_name="measurement",
            name="experiments",
            field=models.JSONField(blank=True, help_text="The client's diagnosis experiments on the node (docs/diagnosis.md): seeded (seed replay), load (runs under CPU load), skipped (null: none ran or none said).", null=True),
        ),
    ]
