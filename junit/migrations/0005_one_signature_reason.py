"""A file whose every failure carries one signature is an infrastructure failure: the
reason's choices gain one_signature (flakeboard/rules/infrastructure.py)."""

from django.db import migrations, models

REASONS = ["error_outside_tests", "failing_share", "one_signature"]


class Migration(migrations.Migration):
    dependencies = [("junit", "0001_squashed_0004_file_test_set_untrusted")]
    operations = [migrations.AlterField(
        model_name="junitfile", name="infrastructure_reason",
        field=models.CharField(
            blank=True, choices=[(reason, reason) for reason in REASONS], max_length=30,
            help_text="Set when the file is an infrastructure failure, left out of detection."),
    )]
