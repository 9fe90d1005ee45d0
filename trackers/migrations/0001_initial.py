import django.db.models.deletion
from django.db import migrations, models


def create_model(name, *fields, **options):
    """The model ``name``: the ``id`` Django adds to a model without a key, ``fields``, and its Meta ``options``."""
    fields = [('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')), *fields]
    return migrations.CreateModel(name=name, fields=fields, options=options)


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('ledger', '0001_squashed_0023_node_written_key'),
    ]

    operations = [
        create_model(
            'Tracker',
            ('kind', models.CharField(choices=[('github', 'GitHub Issues'), ('gitlab', 'GitLab issues'), ('jira', 'Jira Cloud')], max_length=10)),
            ('site', models.URLField(max_length=500)),
            ('project', models.CharField(max_length=200)),
            ('issue_type', models.CharField(blank=True, max_length=60)),
            ('email', models.CharField(blank=True, max_length=254)),
            ('labels', models.CharField(blank=True, default='flaky-test', max_length=500)),
            ('token_encrypted', models.TextField(editable=False)),
            ('on_new_entry', models.BooleanField(default=True)),
            ('on_ci_flaky', models.BooleanField(default=False)),
            ('on_born_flaky', models.BooleanField(default=False)),
            ('ci_flaky_since', models.DateField(blank=True, editable=False, null=True)),
            ('born_flaky_since', models.DateField(blank=True, editable=False, null=True)),
            ('cursor', models.BigIntegerField(default=0)),
            ('created_at', models.DateTimeField()),
            ('created_by', models.CharField(blank=True, max_length=200)),
            ('last_error', models.TextField(blank=True)),
            ('last_error_at', models.DateTimeField(blank=True, null=True)),
            ('suite', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='tracker', to='ledger.suite')),
        ),
        create_model(
            'TrackerIssue',
            ('kind', models.CharField(choices=[('github', 'GitHub Issues'), ('gitlab', 'GitLab issues'), ('jira', 'Jira Cloud')], max_length=10)),
            ('key', models.CharField(max_length=100)),
            ('url', models.URLField(max_length=2000)),
            ('closed', models.BooleanField(default=False)),
            ('created_at', models.DateTimeField()),
            ('entry', models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='tracker_issue', to='ledger.quarantineentry')),
            ('node', models.ForeignKey(null=True, on_delete=django.db.models.deletion.CASCADE, related_name='tracker_issues', to='ledger.node')),
            ('suite', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tracker_issues', to='ledger.suite')),
        ),
        create_model(
            'TrackerJob',
            ('key', models.CharField(max_length=100)),
            ('action', models.CharField(choices=[('open', 'Open an issue'), ('renewed', 'Comment: renewed'), ('expired', 'Comment: expired'), ('cleared', 'Comment: cleared'), ('close', 'Close the issue'), ('ci_flaky', 'Open an issue: flaky in CI'), ('born_flaky', 'Open an issue: flaky at birth')], max_length=10)),
            ('status', models.CharField(choices=[('pending', 'Pending'), ('sending', 'Sending'), ('sent', 'Sent'), ('failed', 'Failed'), ('skipped', 'Skipped')], default='pending', max_length=10)),
            ('attempts', models.PositiveIntegerField(default=0)),
            ('response_code', models.PositiveSmallIntegerField(blank=True, null=True)),
            ('error', models.TextField(blank=True)),
            ('created_at', models.DateTimeField()),
            ('updated_at', models.DateTimeField()),
            ('entry', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='tracker_jobs', to='ledger.quarantineentry')),
            ('event', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='ledger.auditevent')),
            ('node', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='ledger.node')),
            ('suite', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tracker_jobs', to='ledger.suite')),
            ordering=['-updated_at', '-id'],
            constraints=[models.UniqueConstraint(fields=('suite', 'key'), name='one_tracker_job_per_key')],
        ),
    ]
