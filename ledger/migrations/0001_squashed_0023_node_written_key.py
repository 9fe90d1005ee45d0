"""The ledger's tables as its migrations 0001 to 0023 left them, and on PostgreSQL a
notification on the channel ``flakeboard_rows`` for each statement that changes suites or
tokens (ledger/changes.py). Every column of a token but ``last_used_at`` (written at most once
a minute while the token is used) and ``default_branch_only`` (set only when the token is
made): a column added to the token that may change later joins the list in a migration of its
own. Nothing on SQLite, whose ``PRAGMA data_version`` tells the same.

The data migrations of 0003, 0014, 0017 and 0023 are left out: this migration runs only on a
database that has none of the tables yet, where they have no rows to change."""

import django.core.validators
import django.db.models.deletion
import ledger.models
import ledger.models.fields
from django.conf import settings
from django.db import migrations, models


TOKEN_COLUMNS = ("suite_id", "name", "scope", "prefix", "digest", "created_at", "created_by",
                 "revoked_at", "expires_at")
CREATE = f"""
CREATE OR REPLACE FUNCTION flakeboard_rows_changed() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('flakeboard_rows', TG_TABLE_NAME);
    RETURN NULL;
END
$$ LANGUAGE plpgsql;
CREATE TRIGGER flakeboard_suite_rows AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON ledger_suite FOR EACH STATEMENT EXECUTE FUNCTION flakeboard_rows_changed();
CREATE TRIGGER flakeboard_apitoken_rows
    AFTER UPDATE OF {", ".join(TOKEN_COLUMNS)} OR DELETE OR TRUNCATE
    ON ledger_apitoken FOR EACH STATEMENT EXECUTE FUNCTION flakeboard_rows_changed();
"""
DROP = """
DROP TRIGGER IF EXISTS flakeboard_apitoken_rows ON ledger_apitoken;
DROP TRIGGER IF EXISTS flakeboard_suite_rows ON ledger_suite;
DROP FUNCTION IF EXISTS flakeboard_rows_changed();
"""


def create_model(name, *fields, **options):
    """The model ``name``: the ``id`` Django adds to a model without a key, ``fields``, and its Meta ``options``."""
    fields = [('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')), *fields]
    return migrations.CreateModel(name=name, fields=fields, options=options)


def run(sql):
    def operation(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)
    return operation


class Migration(migrations.Migration):

    replaces = [('ledger', '0001_initial'), ('ledger', '0002_node_seen_only_in_uploads'), ('ledger', '0003_node_and_glob_keys'), ('ledger', '0004_suite_public_badge'), ('ledger', '0005_suite_junit_infrastructure_share'), ('ledger', '0006_measure_target'), ('ledger', '0007_release_when_fixed'), ('ledger', '0008_suite_codeowners'), ('ledger', '0009_token_expires_at'), ('ledger', '0010_suite_auto_clear'), ('ledger', '0011_suite_default_branch_ci_run'), ('ledger', '0012_trail_ci_failures'), ('ledger', '0013_job_locks'), ('ledger', '0014_node_first_commit'), ('ledger', '0015_suite_new_test_policy'), ('ledger', '0016_row_change_triggers'), ('ledger', '0017_node_tiers_by_rules_alone'), ('ledger', '0018_token_default_branch_only'), ('ledger', '0019_trust_policy'), ('ledger', '0020_suite_measure_budget'), ('ledger', '0021_entry_ticket'), ('ledger', '0022_suite_junit_summary_day'), ('ledger', '0023_node_written_key')]

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        create_model(
            'Node',
            ('nodeid', models.CharField(max_length=1000)),
            ('key', ledger.models.KeyField(editable=False, max_length=32, source='nodeid')),
            ('written_key', ledger.models.WrittenKeyField(editable=False, max_length=32, source='nodeid')),
            ('stated_tier', models.PositiveSmallIntegerField(blank=True, null=True)),
            ('tier', models.PositiveSmallIntegerField(default=2)),
            ('first_seen', models.DateField(blank=True, null=True)),
            ('last_seen', models.DateField(blank=True, null=True)),
            ('first_commit', models.CharField(blank=True, max_length=200, null=True)),
        ),
        create_model(
            'Suite',
            ('slug', models.SlugField(max_length=64, unique=True)),
            ('name', models.CharField(blank=True, max_length=200)),
            ('max_upper_rate', models.FloatField(default=ledger.models.PolicyDefault('max_upper_rate'), help_text='A measurement passes when its Wilson upper bound is at or below this.', validators=[django.core.validators.MinValueValidator(0.0001), django.core.validators.MaxValueValidator(1.0)])),
            ('min_runs', models.PositiveIntegerField(default=ledger.models.PolicyDefault('min_runs'), help_text='A measurement with fewer runs is not evidence of stability.', validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(1000000)])),
            ('max_quarantined_share', models.FloatField(default=ledger.models.PolicyDefault('max_quarantined_share'), help_text='The largest share of the test set that may be quarantined at once.', validators=[django.core.validators.MinValueValidator(0.0), django.core.validators.MaxValueValidator(1.0)])),
            ('max_quarantine_days', models.PositiveIntegerField(default=ledger.models.PolicyDefault('max_quarantine_days'), help_text="How far ahead an entry's expiry may be set.", validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(365)])),
            ('clear_after_clean_measurements', models.PositiveSmallIntegerField(default=ledger.models.PolicyDefault('clear_after_clean_measurements'), help_text="An open entry is ready to clear when its node's last this many measurements since the entry was created were each within budget.", validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(20)])),
            ('new_test_runs', models.PositiveSmallIntegerField(default=ledger.models.PolicyDefault('new_test_runs'), help_text='How many times gate --measure runs each new tier-2 test (fewer when slow, never fewer than 3).', validators=[django.core.validators.MinValueValidator(3), django.core.validators.MaxValueValidator(1000)])),
            ('new_test_share', models.FloatField(default=ledger.models.PolicyDefault('new_test_share'), help_text='When more than this share of a selection is new, the guard measures only the first new tests up to it, so CI stays fast.', validators=[django.core.validators.MinValueValidator(0.01), django.core.validators.MaxValueValidator(1.0)])),
            ('measure_budget', models.PositiveIntegerField(default=ledger.models.PolicyDefault('measure_budget'), help_text="The seconds gate --measure may spend measuring the tier-2 tests a patch calls for (failed, new, in a changed test file, flaky-prone), estimated from their time in the gate's run.", validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(86400)])),
            ('fixture_manifest', models.CharField(blank=True, help_text='The pinned fixture manifest digest (empty: no pin).', max_length=200)),
            ('fixture_seed', models.BigIntegerField(blank=True, null=True)),
            ('junit_infrastructure_share', models.FloatField(default=0.8, help_text='A JUnit file in which more than this share of the tests fail is taken for a broken runner (infrastructure), and left out of flaky-test detection.', validators=[django.core.validators.MinValueValidator(0.0), django.core.validators.MaxValueValidator(1.0)])),
            ('junit_summary_day', models.DateField(blank=True, editable=False, null=True)),
            ('public_badge', models.BooleanField(default=False, help_text="Anyone with its address may see the status badge (for a README); otherwise only the suite's members.")),
            ('auto_clear', models.BooleanField(default=False, help_text="manage.py notify clears every entry ready to clear, the board as the actor and the clean measurements as the note's evidence.")),
            ('codeowners', models.TextField(blank=True, help_text="The repository's CODEOWNERS file: each node's default owners.")),
            ('default_branch', models.CharField(default='main', help_text='The branch whose CI runs (their JUnit files) size the test set; JUnit from any other branch never does.', max_length=200, validators=[ledger.models.fields.branch_name])),
            ('ledger_revision', models.PositiveBigIntegerField(default=0)),
            ('created_at', models.DateTimeField(auto_now_add=True)),
            ordering=['slug'],
        ),
        create_model(
            'JobLock',
            ('job', models.CharField(max_length=40)),
            ('suite_id', models.PositiveIntegerField(default=0)),
            ('holder', models.CharField(help_text='host:pid of the run that holds it.', max_length=200)),
            ('taken_at', models.DateTimeField()),
            constraints=[models.UniqueConstraint(fields=('job', 'suite_id'), name='one_job_lock')],
        ),
        create_model(
            'QuarantineEntry',
            ('klass', models.CharField(default='flake', max_length=20, verbose_name='class')),
            ('seed_base', models.BigIntegerField(blank=True, null=True)),
            ('n', models.PositiveIntegerField(default=0)),
            ('fails', models.PositiveIntegerField(default=0)),
            ('upper95', models.FloatField(default=1.0, help_text="The server's Wilson bound for fails/n.")),
            ('reported_upper95', models.FloatField(blank=True, null=True)),
            ('upper95_mismatch', models.BooleanField(default=False)),
            ('owner', models.CharField(max_length=254)),
            ('expires', models.DateField()),
            ('evidence', models.CharField(max_length=2000)),
            ('note', models.TextField(blank=True)),
            ('renewals', models.PositiveIntegerField(default=0)),
            ('created_at', models.DateTimeField()),
            ('created_by', models.CharField(max_length=200)),
            ('updated_at', models.DateTimeField()),
            ('cleared_at', models.DateTimeField(blank=True, null=True)),
            ('cleared_note', models.TextField(blank=True)),
            ('ready_to_clear', models.BooleanField(default=False, help_text="The node's last measurements since the entry was created were each within budget (the suite's clear_after_clean_measurements of them).")),
            ('ready_since', models.DateTimeField(blank=True, null=True)),
            ('ticket', models.URLField(blank=True, max_length=2000)),
            ('ticket_closed_at', models.DateTimeField(blank=True, null=True)),
            ('trail', models.JSONField(blank=True, default=list, help_text="The node's latest measurements since the entry was created, and the failures CI saw since, oldest first (at most 20): report, n, fails, classification, clean; or ci (junit, gate), commit, count.")),
            ('node', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='entries', to='ledger.node')),
            ('suite', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='entries', to='ledger.suite')),
            verbose_name_plural='quarantine entries',
            ordering=['expires', 'id'],
            indexes=[models.Index(fields=['suite', 'cleared_at', 'expires'], name='entry_suite_open_exp'), models.Index(fields=['suite', 'owner'], name='entry_suite_owner')],
            constraints=[models.UniqueConstraint(condition=models.Q(('cleared_at__isnull', True)), fields=('node',), name='one_open_entry_per_node')],
        ),
        migrations.AddField(
            model_name='node',
            name='suite',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='nodes', to='ledger.suite'),
        ),
        create_model(
            'Membership',
            ('role', models.CharField(choices=[('viewer', 'Viewer'), ('owner', 'Owner'), ('lead', 'Lead')], default='viewer', max_length=10)),
            ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to=settings.AUTH_USER_MODEL)),
            ('suite', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='ledger.suite')),
            constraints=[models.UniqueConstraint(fields=('suite', 'user'), name='one_membership_per_user')],
        ),
        create_model(
            'MeasureTarget',
            ('added_at', models.DateTimeField()),
            ('added_by', models.CharField(max_length=200)),
            ('node', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='measure_target', to='ledger.node')),
            ('suite', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='measure_targets', to='ledger.suite')),
            ordering=['added_at', 'id'],
        ),
        create_model(
            'CiRun',
            ('branch', models.CharField(max_length=200)),
            ('commit', models.CharField(max_length=200)),
            ('jobs', models.JSONField(default=list, help_text="The jobs' names, sorted.")),
            ('tests', models.PositiveIntegerField(default=0, help_text='Distinct tests over its files.')),
            ('files', models.PositiveIntegerField(default=0)),
            ('first_at', models.DateTimeField()),
            ('last_at', models.DateTimeField()),
            ('last_day', models.DateField()),
            ('members', models.BinaryField(blank=True, null=True)),
            ('suite', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='ci_runs', to='ledger.suite')),
            ordering=['-first_at', '-id'],
            indexes=[models.Index(fields=['suite', 'branch', '-first_at'], name='cirun_recent')],
            constraints=[models.UniqueConstraint(fields=('suite', 'branch', 'commit'), name='one_ci_run_per_commit')],
        ),
        create_model(
            'AuditEvent',
            ('action', models.CharField(choices=[('create', 'Quarantined'), ('import', 'Imported'), ('renew', 'Renewed'), ('clear', 'Cleared'), ('settings', 'Settings changed'), ('tier_rule', 'Tier rule changed'), ('token', 'API token changed'), ('member', 'Membership changed'), ('target', 'Measurement targets changed'), ('ticket', 'Ticket changed')], max_length=20)),
            ('actor', models.CharField(max_length=200)),
            ('at', models.DateTimeField()),
            ('before', models.JSONField(blank=True, default=dict)),
            ('after', models.JSONField(blank=True, default=dict)),
            ('note', models.TextField(blank=True)),
            ('entry', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='events', to='ledger.quarantineentry')),
            ('suite', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='events', to='ledger.suite')),
            ordering=['at', 'id'],
            indexes=[models.Index(fields=['entry', 'at'], name='event_entry_at'), models.Index(fields=['suite', 'at'], name='event_suite_at')],
        ),
        create_model(
            'ApiToken',
            ('name', models.CharField(blank=True, max_length=100)),
            ('scope', models.CharField(choices=[('read', 'Read'), ('write', 'Write')], max_length=5)),
            ('prefix', models.CharField(max_length=16, unique=True)),
            ('digest', models.CharField(max_length=64)),
            ('created_at', models.DateTimeField(auto_now_add=True)),
            ('created_by', models.CharField(blank=True, max_length=200)),
            ('last_used_at', models.DateTimeField(blank=True, null=True)),
            ('revoked_at', models.DateTimeField(blank=True, null=True)),
            ('expires_at', models.DateTimeField(blank=True, null=True)),
            ('default_branch_only', models.BooleanField(default=False, help_text="Uploads only for the suite's default branch; only such a token's JUnit sizes the test set.")),
            ('suite', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tokens', to='ledger.suite')),
            ordering=['-created_at'],
        ),
        create_model(
            'TierRule',
            ('glob', models.CharField(max_length=1000)),
            ('glob_key', ledger.models.KeyField(editable=False, max_length=32, source='glob')),
            ('tier', models.PositiveSmallIntegerField(choices=[(0, '0: property check'), (1, '1: pinned fixture'), (2, '2: repeat budget')])),
            ('created_at', models.DateTimeField(auto_now_add=True)),
            ('created_by', models.CharField(blank=True, max_length=200)),
            ('suite', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tier_rules', to='ledger.suite')),
            ordering=['tier', 'glob'],
            constraints=[models.UniqueConstraint(fields=('suite', 'glob_key'), name='unique_glob_key_per_suite')],
        ),
        create_model(
            'TrustPolicy',
            ('kind', models.CharField(choices=[('github', 'GitHub Actions'), ('gitlab', 'GitLab'), ('custom', 'Custom')], max_length=10)),
            ('issuer', models.URLField(help_text="The tokens' iss claim.")),
            ('repository', models.CharField(help_text='owner/name, or group/project.', max_length=200)),
            ('workflow', models.CharField(blank=True, help_text='Empty: any workflow of the repository.', max_length=200)),
            ('default_ref', models.CharField(help_text="The default branch's ref claim.", max_length=200)),
            ('created_at', models.DateTimeField(auto_now_add=True)),
            ('created_by', models.CharField(blank=True, max_length=200)),
            ('suite', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='trust_policies', to='ledger.suite')),
            ordering=['created_at', 'id'],
        ),
        migrations.AddIndex(
            model_name='node',
            index=models.Index(fields=['suite', 'last_seen'], name='node_suite_seen'),
        ),
        migrations.AddIndex(
            model_name='node',
            index=models.Index(fields=['suite', 'written_key'], name='node_suite_written'),
        ),
        migrations.AddConstraint(
            model_name='node',
            constraint=models.UniqueConstraint(fields=('suite', 'key'), name='unique_node_key_per_suite'),
        ),
        migrations.RunPython(run(CREATE), run(DROP), elidable=False),
    ]
