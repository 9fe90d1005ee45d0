"""Each failed gate record's failure signature, and the one signature that made an attempt
an infrastructure failure (flakeboard/rules/infrastructure.py)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("runs", "0014_measurement_experiments")]
    operations = [
        migrations.AddField(
            model_name="nodeverdict",
            name="failure_signature",
            field=models.CharField(blank=True, default="", db_default="", help_text="A failed record's failure signature, as the client's gate sent it.", max_length=200),
        ),
        migrations.AddField(
            model_name="verdictbatch",
            name="infrastructure_signature",
            field=models.CharField(blank=True, default="", db_default="", help_text="The one failure signature that made this attempt an infrastructure failure (empty: none did).", max_length=200),
        ),
        migrations.AlterField(
            model_name="verdictbatch",
            name="infrastructure",
            field=models.BooleanField(default=False, help_text="More than the suite's infrastructure share of the nodes this attempt ran failed, or every failure, at least 3, carried one signature: its runner broke. Its failures count for the verdict, and are never flaky evidence."),
        ),
    ]
