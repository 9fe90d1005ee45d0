"""Each app's migrations are squashed into one that replaces them all, so that a board
migrated by the old ones moves on: ``migrate`` finds nothing to apply and records the
squashed migration as applied. ``OLD`` is the list of migrations that existed before."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder

OLD = {
    "ledger": [
        "0001_initial",
        "0002_node_seen_only_in_uploads",
        "0003_node_and_glob_keys",
        "0004_suite_public_badge",
        "0005_suite_junit_infrastructure_share",
        "0006_measure_target",
        "0007_release_when_fixed",
        "0008_suite_codeowners",
        "0009_token_expires_at",
        "0010_suite_auto_clear",
        "0011_suite_default_branch_ci_run",
        "0012_trail_ci_failures",
        "0013_job_locks",
        "0014_node_first_commit",
        "0015_suite_new_test_policy",
        "0016_row_change_triggers",
        "0017_node_tiers_by_rules_alone",
        "0018_token_default_branch_only",
        "0019_trust_policy",
        "0020_suite_measure_budget",
        "0021_entry_ticket",
        "0022_suite_junit_summary_day",
        "0023_node_written_key",
    ],
    "runs": [
        "0001_initial",
        "0002_judged_against",
        "0003_measurement_classification",
        "0004_batch_deselected_frozen",
        "0005_batch_patch_class",
        "0006_attempts_and_pooling",
        "0007_report_over_cap",
        "0008_report_size_commit",
        "0009_measurement_cause",
        "0010_new_test_reasons",
        "0011_measurement_stated_tier",
        "0012_impact_map",
        "0013_batch_infrastructure",
        "0014_measurement_experiments",
        "0015_failure_signature",
    ],
    "junit": [
        "0001_initial",
        "0002_flaky_days_index",
        "0003_node_first_commit_of_junit",
        "0004_file_test_set_untrusted",
        "0005_one_signature_reason",
        "0006_node_summary",
    ],
    "notify": ["0001_initial", "0002_webhooks"],
}


def squashes() -> dict[str, tuple[str, str]]:
    """Each app's migration that replaces others, by app."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    found = {}
    for (app, name), migration in loader.disk_migrations.items():
        if migration.replaces:
            assert app not in found, f"{app} has two squashed migrations"
            found[app] = (app, name)
    return found


@pytest.mark.parametrize("app", OLD)
def test_the_squashed_migration_replaces_exactly_the_old_ones(app):
    loader = MigrationLoader(None, ignore_no_migrations=True)
    migration = loader.disk_migrations[squashes()[app]]
    assert migration.replaces == [(app, name) for name in OLD[app]]
    on_disk = {name for label, name in loader.disk_migrations if label == app}
    assert not on_disk & set(OLD[app]), "the replaced files are deleted"


@pytest.mark.django_db
def test_a_database_migrated_by_the_old_migrations_has_nothing_to_apply():
    recorder = MigrationRecorder(connection)
    recorder.migration_qs.filter(app__in=OLD).delete()
    for app, names in OLD.items():
        for name in names:
            recorder.record_applied(app, name)
    # The migrations made since the squash are applied to the test database already.
    loader = MigrationLoader(None, ignore_no_migrations=True)
    for app, name in loader.disk_migrations:
        if app in OLD and not loader.disk_migrations[app, name].replaces:
            recorder.record_applied(app, name)
    executor = MigrationExecutor(connection)
    targets = executor.loader.graph.leaf_nodes()
    assert executor.migration_plan(targets) == []
    executor.migrate(targets)
    applied = MigrationRecorder(connection).applied_migrations()
    assert set(squashes().values()) <= applied.keys()
    assert MigrationExecutor(connection).migration_plan(targets) == []
