"""Suite pages about the ledger, under /suites/<suite>/."""

from django.urls import path

from .views import badge, entries, ledger, owners, settings, settings_access, settings_tiers

urlpatterns = [
    path("ledger/", ledger.ledger, name="ledger"),
    path("ledger/bulk/", ledger.ledger_bulk, name="ledger_bulk"),
    path("ledger.csv", ledger.ledger_csv, name="ledger_csv"),
    path("audit.csv", settings.audit_csv, name="audit_csv"),
    path("ledger/new/", entries.entry_new, name="entry_new"),
    path("ledger/<int:pk>/", entries.entry_page, name="entry"),
    path("ledger/<int:pk>/renew/", entries.entry_renew, name="entry_renew"),
    path("ledger/<int:pk>/clear/", entries.entry_clear, name="entry_clear"),
    path("ledger/<int:pk>/clear-ready/", entries.entry_clear_ready, name="entry_clear_ready"),
    path("owners/", owners.owners, name="owners"),
    path("badge.svg", badge.badge, name="badge"),
    path("settings/", settings.settings_page, name="settings"),
    path("settings/policy/", settings.policy, name="settings_policy"),
    path("settings/badge/", settings.badge, name="settings_badge"),
    path("settings/auto-clear/", settings.auto_clear, name="settings_auto_clear"),
    path("settings/junit/", settings.junit_share, name="settings_junit"),
    path("settings/new-tests/", settings.new_tests, name="settings_new_tests"),
    path("settings/measure-budget/", settings.measure_budget, name="settings_measure_budget"),
    path("settings/test-set/", settings.default_branch, name="settings_test_set"),
    path("settings/codeowners/", settings.codeowners, name="settings_codeowners"),
    path("settings/runs-needed/", settings.runs_needed, name="settings_runs_needed"),
    path("settings/fixture-pin/", settings.fixture_pin, name="settings_fixture_pin"),
    path("settings/tier-rules/", settings_tiers.tier_rule_add, name="settings_tier_rule_add"),
    path(
        "settings/tier-rules/preview/",
        settings_tiers.tier_rule_preview,
        name="settings_tier_rule_preview",
    ),
    path(
        "settings/tier-rules/<int:pk>/remove/",
        settings_tiers.tier_rule_remove,
        name="settings_tier_rule_remove",
    ),
    path("settings/members/", settings_access.member_set, name="settings_member_set"),
    path(
        "settings/members/<int:pk>/remove/",
        settings_access.member_remove,
        name="settings_member_remove",
    ),
    path("settings/trusted-ci/", settings_access.trust_policy_create,
         name="settings_trust_policy_add"),
    path("settings/trusted-ci/<int:pk>/remove/", settings_access.trust_policy_delete,
         name="settings_trust_policy_remove"),
    path("settings/tokens/", settings_access.token_create, name="settings_token_create"),
    path(
        "settings/tokens/<int:pk>/revoke/",
        settings_access.token_revoke,
        name="settings_token_revoke",
    ),
]
