"""The runs' tables as their migrations 0001 to 0015 left them."""

import django.db.models.deletion
import ledger.models
from django.db import migrations, models


REASONS = [('clean', 'clean'), ('property_fail', 'property_fail'), ('property_not_run', 'property_not_run'), ('frozen_node', 'frozen_node'), ('fixture_drifted', 'fixture_drifted'), ('fixture_missing', 'fixture_missing'), ('within_budget', 'within_budget'), ('quarantined', 'quarantined'), ('quarantine_expired', 'quarantine_expired'), ('over_budget', 'over_budget'), ('too_few_runs', 'too_few_runs'), ('tier_violation', 'tier_violation'), ('new_test_flaky', 'new_test_flaky'), ('new_test_clean', 'new_test_clean'), ('quarantine_cap_exceeded', 'quarantine_cap_exceeded'), ('no_evidence', 'no_evidence')]


def create_model(name, *fields, **options):
    """The model ``name``: the ``id`` Django adds to a model without a key, ``fields``, and its Meta ``options``."""
    fields = [('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')), *fields]
    return migrations.CreateModel(name=name, fields=fields, options=options)


def upload(*fields):
    """A report's or a batch's columns (``runs.models.Upload``): what its answer was judged
    against, the body and who sent it, and the answer, then the kind's own ``fields``."""
    return [
        ('ledger_revision', models.PositiveBigIntegerField(blank=True, null=True)),
        ('policy', models.JSONField(blank=True, default=dict, help_text="The policy's numbers.")),
        ('policy_hash', models.CharField(blank=True, max_length=16)),
        ('created_at', models.DateTimeField(db_index=True)),
        ('day', models.DateField()),
        ('commit', models.CharField(blank=True, max_length=200)),
        ('evidence', models.CharField(blank=True, max_length=2000)),
        ('uploaded_by', models.CharField(max_length=200)),
        ('digest', models.CharField(max_length=64)),
        ('reason', models.CharField(choices=REASONS, max_length=40)),
        ('exit_code', models.PositiveSmallIntegerField()),
        ('attempt', models.PositiveIntegerField(default=1, help_text="Which upload at its commit (and a batch's patch) this is, from 1: its answer judges the evidence of every one up to it.")),
        *fields,
    ]


def upload_row(*fields, node, parent):
    """A measurement's or a per-node verdict's columns (``runs.models.UploadRow``): its
    reason, flags and entry, the kind's own ``fields``, its node (``related_name`` ``node``)
    and its report or batch, ``parent``."""
    return [
        ('created_at', models.DateTimeField()),
        ('reason', models.CharField(choices=REASONS, max_length=40)),
        ('flags', models.JSONField(blank=True, default=list)),
        ('entry_state', models.CharField(blank=True, choices=[('active', 'active'), ('expiring', 'expiring'), ('expired', 'expired'), ('cleared', 'cleared'), ('tier_violation', 'tier_violation')], help_text="The entry's state at upload.", max_length=20)),
        *fields,
        ('entry', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='ledger.quarantineentry')),
        ('node', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name=node, to='ledger.node')),
        ('suite', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='ledger.suite')),
        parent,
    ]


class Migration(migrations.Migration):

    replaces = [('runs', '0001_initial'), ('runs', '0002_judged_against'), ('runs', '0003_measurement_classification'), ('runs', '0004_batch_deselected_frozen'), ('runs', '0005_batch_patch_class'), ('runs', '0006_attempts_and_pooling'), ('runs', '0007_report_over_cap'), ('runs', '0008_report_size_commit'), ('runs', '0009_measurement_cause'), ('runs', '0010_new_test_reasons'), ('runs', '0011_measurement_stated_tier'), ('runs', '0012_impact_map'), ('runs', '0013_batch_infrastructure'), ('runs', '0014_measurement_experiments'), ('runs', '0015_failure_signature')]

    initial = True

    dependencies = [
        ('ledger', '0001_squashed_0023_node_written_key'),
    ]

    operations = [
        create_model(
            'ImpactMap',
            ('commit', models.CharField(blank=True, max_length=200)),
            ('recorded_at', models.DateTimeField()),
            ('nodes', models.PositiveIntegerField(help_text='How many tests the map holds.')),
            ('paths', models.PositiveIntegerField(help_text='How many distinct source files it names.')),
            ('suite', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='impact_map', to='ledger.suite')),
        ),
        create_model(
            'Report',
            *upload(
                ('branch', models.CharField(blank=True, max_length=200)),
                ('selected_total', models.PositiveIntegerField(blank=True, null=True)),
                ('status', models.CharField(choices=[('OK', 'OK'), ('WARN', 'WARN'), ('FAIL', 'FAIL')], max_length=4)),
                ('quarantined', models.PositiveIntegerField(help_text='Entries counting toward the share.')),
                ('test_set_size', models.PositiveIntegerField()),
                ('share', models.FloatField()),
                ('max_share', models.FloatField(help_text='The cap in force at upload.')),
                ('size_source', models.CharField(blank=True, choices=[('selected_total', 'selected_total'), ('ci_run', 'ci_run'), ('known_nodes', 'known_nodes')], help_text='Where the test set size came from.', max_length=20)),
                ('size_commit', models.CharField(blank=True, help_text="The commit of CI's run that sized the test set (size source ci_run).", max_length=200)),
                ('over_cap', models.BooleanField(default=False)),
                ('measurement_count', models.PositiveIntegerField(default=0)),
                ('fail_count', models.PositiveIntegerField(default=0)),
                ('warn_count', models.PositiveIntegerField(default=0)),
                ('suite', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='reports', to='ledger.suite')),
            ),
            ordering=['-created_at', '-id'],
            abstract=False,
            indexes=[models.Index(fields=['suite', '-created_at'], name='report_suite_recent'), models.Index(fields=['suite', 'commit'], name='report_suite_commit')],
            constraints=[models.UniqueConstraint(fields=('suite', 'digest'), name='report_once_per_digest')],
        ),
        create_model(
            'Measurement',
            *upload_row(
                ('position', models.PositiveIntegerField(help_text='Row index in the uploaded report.')),
                ('n', models.PositiveIntegerField()),
                ('fails', models.PositiveIntegerField()),
                ('upper95', models.FloatField(help_text="The server's Wilson bound.")),
                ('reported_upper95', models.FloatField(blank=True, null=True)),
                ('seed_base', models.BigIntegerField(blank=True, null=True)),
                ('stated_tier', models.PositiveSmallIntegerField(blank=True, help_text='The tier the row stated for its node: kept, flagged tier_disagrees where the tier rules give another, never deciding (null: not said).', null=True)),
                ('classification', models.CharField(blank=True, choices=[('stable', 'Stable'), ('flaky', 'Flaky'), ('broken', 'Broken'), ('order_dependent', 'Order-dependent'), ('repeat_unsafe', 'Repeat-unsafe')], help_text="What the client's measure command found the test to be (empty: not said).", max_length=20)),
                ('status', models.CharField(choices=[('OK', 'OK'), ('WARN', 'WARN'), ('FAIL', 'FAIL')], max_length=4)),
                ('pooled', models.JSONField(blank=True, help_text="The node's counts pooled with the earlier reports at the commit, which the gate judged: n, fails and the earlier reports' ids (null: none earlier).", null=True)),
                ('cause', models.JSONField(blank=True, help_text="For an order_dependent test, the tests the client's measure command found it depends on: role (polluter or state_setter), nodes, complete.", null=True)),
                ('experiments', models.JSONField(blank=True, help_text="The client's diagnosis experiments on the node (docs/diagnosis.md): seeded (seed replay), load (runs under CPU load), skipped (null: none ran or none said).", null=True)),
                node='measurements',
                parent=('report', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='measurements', to='runs.report')),
            ),
            ordering=['position'],
            abstract=False,
            indexes=[models.Index(fields=['report', 'position'], name='measurement_report_pos'), models.Index(fields=['node', '-created_at'], name='measurement_node_recent')],
        ),
        create_model(
            'VerdictBatch',
            *upload(
                ('patch', models.CharField(blank=True, max_length=200)),
                ('verdict', models.CharField(choices=[('accept', 'accept'), ('hold', 'hold'), ('reject', 'reject')], max_length=6)),
                ('record_count', models.PositiveIntegerField(default=0)),
                ('reason_counts', models.JSONField(blank=True, default=dict)),
                ('pin_manifest', models.CharField(blank=True, max_length=200)),
                ('pin_seed', models.BigIntegerField(blank=True, null=True)),
                ('deselected_frozen', models.JSONField(blank=True, default=list)),
                ('patch_class', models.CharField(blank=True, choices=[('low', 'low'), ('medium', 'medium'), ('high', 'high')], help_text='How much the patch touches concurrency or time (empty: not said).', max_length=6)),
                ('risky_lines', models.PositiveIntegerField(blank=True, help_text="The patch's added source lines that touch concurrency or time.", null=True)),
                ('failing_share', models.FloatField(default=0.0, help_text='Of the nodes this attempt sent that ran (passed or failed), the share that failed.')),
                ('infrastructure', models.BooleanField(default=False, help_text="More than the suite's infrastructure share of the nodes this attempt ran failed, or every failure, at least 3, carried one signature: its runner broke. Its failures count for the verdict, and are never flaky evidence.")),
                ('infrastructure_signature', models.CharField(blank=True, db_default='', default='', help_text='The one failure signature that made this attempt an infrastructure failure (empty: none did).', max_length=200)),
                ('suite', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='batches', to='ledger.suite')),
            ),
            verbose_name_plural='verdict batches',
            ordering=['-created_at', '-id'],
            abstract=False,
            indexes=[models.Index(fields=['suite', '-created_at'], name='batch_suite_recent'), models.Index(fields=['suite', 'commit', 'patch', '-attempt'], name='batch_suite_attempts')],
            constraints=[models.UniqueConstraint(fields=('suite', 'digest'), name='batch_once_per_digest')],
        ),
        create_model(
            'NodeVerdict',
            *upload_row(
                ('position', models.PositiveIntegerField()),
                ('property_check', models.CharField(max_length=8)),
                ('fixture_lock', models.CharField(max_length=8)),
                ('flake_status', models.CharField(max_length=8)),
                ('fixture_manifest', models.CharField(blank=True, max_length=200, null=True)),
                ('seed', models.BigIntegerField(blank=True, null=True)),
                ('freeze_expires', models.DateField(blank=True, null=True)),
                ('stated_tier', models.PositiveSmallIntegerField(blank=True, null=True)),
                ('failure_signature', models.CharField(blank=True, db_default='', default='', help_text="A failed record's failure signature, as the client's gate sent it.", max_length=200)),
                ('effective_lock', models.CharField(max_length=8)),
                ('effective_status', models.CharField(max_length=8)),
                ('verdict', models.CharField(choices=[('accept', 'accept'), ('hold', 'hold'), ('reject', 'reject')], max_length=6)),
                ('attempts', models.JSONField(blank=True, help_text="The node's attempts at this patch and commit: runs, failed_in, passed_in.", null=True)),
                ('flipped', models.BooleanField(default=False, help_text='The node failed in one attempt up to this one and passed in another: flaky evidence.')),
                ('sent', models.BooleanField(default=True, help_text='False: the node was not in this upload; its record is its latest from an earlier attempt, judged again with this one.')),
                node='verdicts',
                parent=('batch', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='verdicts', to='runs.verdictbatch')),
            ),
            ordering=['position'],
            abstract=False,
            indexes=[models.Index(fields=['batch', 'position'], name='verdict_batch_pos'), models.Index(fields=['node', '-created_at'], name='verdict_node_recent'), models.Index(condition=models.Q(('flipped', True)), fields=['suite', 'node'], name='verdict_flipped')],
        ),
        create_model(
            'ImpactPath',
            ('node', models.CharField(max_length=1000)),
            ('path', models.CharField(max_length=1000)),
            ('path_key', ledger.models.KeyField(editable=False, max_length=32, source='path')),
            ('suite', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='ledger.suite')),
            indexes=[models.Index(fields=['suite', 'path_key'], name='impact_suite_path')],
        ),
        create_model(
            'ReasonRollup',
            ('day', models.DateField()),
            ('source', models.CharField(choices=[('verdicts', 'Verdict batches'), ('reports', 'Flake reports')], max_length=8)),
            ('reason', models.CharField(choices=REASONS, max_length=40)),
            ('count', models.PositiveBigIntegerField(default=0)),
            ('suite', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='ledger.suite')),
            constraints=[models.UniqueConstraint(fields=('suite', 'source', 'day', 'reason'), name='one_rollup_per_key')],
        ),
    ]
