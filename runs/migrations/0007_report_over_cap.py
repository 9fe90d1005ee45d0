from django.db import migrations


class Migration(migrations.Migration):
    """One name for one idea: the report's flag is over_cap, as the API and the rules call it."""

    dependencies = [
        ('runs', '0006_attempts_and_pooling'),
    ]

    operations = [
        migrations.RenameField(
            model_name='report',
            old_name='cap_exceeded',
            new_name='over_cap',
        ),
    ]
