"""The JUnit tables as their migrations 0001 to 0006 left them. The summaries that 0006
built for the suites with rollups are left out: this migration runs only on a database that
has none of the tables yet."""

import django.db.models.deletion
from django.db import migrations, models


def create_model(name, *fields, **options):
    """The model ``name``: the ``id`` Django adds to a model without a key, ``fields``, and its Meta ``options``."""
    fields = [('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')), *fields]
    return migrations.CreateModel(name=name, fields=fields, options=options)


def rollup(*fields):
    """A rollup row of one node (``junit.models.NodeRollup``): the kind's own ``fields``, then
    its node and suite, whose foreign keys need no index of their own."""
    return [
        *fields,
        ('node', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='ledger.node')),
        ('suite', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='ledger.suite')),
    ]


def day_rollup(*fields):
    """A node's rollup row of one day and branch (``junit.models.DayRollup``)."""
    return rollup(
        ('day', models.DateField()),
        ('branch', models.CharField(blank=True, max_length=200)),
        *fields,
    )


def node_counts():
    """A node's runs, failures, flaky failures and the commits it became flaky on: of one day
    and branch (``NodeDay``), or summed over the summary's days (``NodeSummary``)."""
    return [
        ('runs', models.PositiveIntegerField(default=0)),
        ('failures', models.PositiveIntegerField(default=0)),
        ('flaky_failures', models.PositiveIntegerField(default=0)),
        ('flaky_commits', models.PositiveIntegerField(default=0)),
    ]


class Migration(migrations.Migration):

    replaces = [('junit', '0001_initial'), ('junit', '0002_flaky_days_index'), ('junit', '0003_node_first_commit_of_junit'), ('junit', '0004_file_test_set_untrusted'), ('junit', '0005_one_signature_reason'), ('junit', '0006_node_summary')]

    initial = True

    dependencies = [
        ('ledger', '0001_squashed_0023_node_written_key'),
    ]

    operations = [
        create_model(
            'JUnitFile',
            ('created_at', models.DateTimeField()),
            ('day', models.DateField()),
            ('commit', models.CharField(max_length=200)),
            ('branch', models.CharField(blank=True, max_length=200)),
            ('job', models.CharField(blank=True, max_length=200)),
            ('attempt', models.PositiveIntegerField(default=1)),
            ('uploaded_by', models.CharField(max_length=200)),
            ('digest', models.CharField(max_length=64)),
            ('producer', models.CharField(choices=[('pytest', 'pytest'), ('surefire', 'surefire'), ('jest', 'jest'), ('gotestsum', 'gotestsum'), ('junit', 'junit')], max_length=10)),
            ('testcases', models.PositiveIntegerField(default=0)),
            ('passed', models.PositiveIntegerField(default=0)),
            ('failed', models.PositiveIntegerField(default=0)),
            ('error', models.PositiveIntegerField(default=0)),
            ('skipped', models.PositiveIntegerField(default=0)),
            ('reruns', models.PositiveIntegerField(default=0)),
            ('flaky_in_file', models.PositiveIntegerField(default=0, help_text='Tests that both passed and failed within this file.')),
            ('failing_share', models.FloatField(default=0.0, help_text='Of the tests that ran.')),
            ('infrastructure_share', models.FloatField(help_text="The suite's share at upload.")),
            ('infrastructure_reason', models.CharField(blank=True, choices=[('error_outside_tests', 'error_outside_tests'), ('failing_share', 'failing_share'), ('one_signature', 'one_signature')], help_text='Set when the file is an infrastructure failure, left out of detection.', max_length=30)),
            ('test_set_untrusted', models.BooleanField(default=False, help_text='Stated the default branch with a token not kept for it: stored as evidence, left out of the test set.')),
            ('newly_flaky', models.JSONField(blank=True, default=list)),
            ('differs_by_job', models.JSONField(blank=True, default=list)),
            ('suite', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='junit_files', to='ledger.suite')),
            ordering=['-created_at', '-id'],
            indexes=[models.Index(fields=['suite', '-created_at'], name='junit_suite_recent'), models.Index(fields=['suite', 'commit'], name='junit_suite_commit'), models.Index(fields=['day'], name='junit_day')],
            constraints=[models.UniqueConstraint(fields=('suite', 'digest'), name='junit_once_per_digest')],
        ),
        create_model(
            'CaseResult',
            ('day', models.DateField()),
            ('position', models.PositiveIntegerField(help_text="Its first testcase's index in the file.")),
            ('outcome', models.CharField(choices=[('passed', 'passed'), ('failed', 'failed'), ('error', 'error'), ('skipped', 'skipped')], help_text="Its last attempt's.", max_length=7)),
            ('attempts', models.PositiveIntegerField(default=1)),
            ('passes', models.PositiveIntegerField(default=0)),
            ('failures', models.PositiveIntegerField(default=0, help_text='Failed or error attempts.')),
            ('duration', models.FloatField(blank=True, help_text='Seconds, all attempts.', null=True)),
            ('message', models.CharField(blank=True, help_text="The first failure's first line.", max_length=500)),
            ('signature', models.CharField(blank=True, max_length=200)),
            ('node', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='ledger.node')),
            ('suite', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='ledger.suite')),
            ('file', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='results', to='junit.junitfile')),
            ordering=['position'],
            indexes=[models.Index(fields=['file', 'position'], name='caseresult_file_pos'), models.Index(fields=['node', '-day'], name='caseresult_node_recent')],
        ),
        create_model(
            'NodeDay',
            *day_rollup(*node_counts()),
            indexes=[models.Index(fields=['node', 'day'], name='nodeday_node_day'), models.Index(condition=models.Q(('flaky_failures__gt', 0)), fields=['suite', 'day'], name='nodeday_flaky_days'), models.Index(condition=models.Q(('flaky_failures__gt', 0)), fields=['node', 'day'], name='nodeday_flaky_node_days')],
            constraints=[models.UniqueConstraint(fields=('suite', 'day', 'branch', 'node'), name='one_node_day_per_branch')],
        ),
        create_model(
            'NodeSummary',
            *rollup(
                *node_counts(),
                ('first_flaky', models.DateField(blank=True, null=True)),
                ('last_flaky', models.DateField(blank=True, null=True)),
                ('spark', models.JSONField(default=list, help_text='Flaky failures a day, oldest first.')),
            ),
            indexes=[models.Index(condition=models.Q(('flaky_failures__gt', 0)), fields=['suite', '-flaky_failures', '-flaky_commits', 'node'], name='summary_ranking'), models.Index(condition=models.Q(('flaky_failures__gt', 0)), fields=['suite', 'last_flaky'], name='summary_last_flaky')],
            constraints=[models.UniqueConstraint(fields=('node',), name='one_summary_per_node')],
        ),
        create_model(
            'SignatureDay',
            *day_rollup(
                ('signature', models.CharField(blank=True, max_length=200)),
                ('failures', models.PositiveIntegerField(default=0)),
            ),
            indexes=[models.Index(fields=['suite', 'day'], name='signatureday_suite_day')],
            constraints=[models.UniqueConstraint(fields=('node', 'day', 'branch', 'signature'), name='one_signature_day')],
        ),
        create_model(
            'SignatureSummary',
            *rollup(
                ('signature', models.CharField(blank=True, max_length=200)),
                ('failures', models.PositiveIntegerField(default=0)),
            ),
            indexes=[models.Index(fields=['suite'], name='signaturesummary_suite')],
            constraints=[models.UniqueConstraint(fields=('node', 'signature'), name='one_signature_summary')],
        ),
        create_model(
            'JobOutcome',
            *rollup(
                ('commit', models.CharField(max_length=200)),
                ('job', models.CharField(blank=True, max_length=200)),
                ('passes', models.PositiveIntegerField(default=0)),
                ('failures', models.PositiveIntegerField(default=0)),
                ('flaky', models.BooleanField(default=False)),
                ('last_day', models.DateField()),
            ),
            indexes=[models.Index(fields=['last_day'], name='joboutcome_last_day')],
            constraints=[models.UniqueConstraint(fields=('suite', 'commit', 'job', 'node'), name='one_job_outcome_per_node')],
        ),
    ]
