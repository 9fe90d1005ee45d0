"""Suite pages about the ledger, under /suites/<suite>/."""

from django.urls import path

from . import settings_views, views_entries, views_ledger

urlpatterns = [
    path("ledger/", views_ledger.ledger, name="ledger"),
    path("ledger/new/", views_entries.entry_new, name="entry_new"),
    path("ledger/<int:pk>/", views_entries.entry_page, name="entry"),
    path("ledger/<int:pk>/renew/", views_entries.entry_renew, name="entry_renew"),
    path("ledger/<int:pk>/clear/", views_entries.entry_clear, name="entry_clear"),
    path("settings/", settings_views.settings_page, name="settings"),
    path("settings/policy/", settings_views.policy, name="settings_policy"),
    path("settings/runs-needed/", settings_views.runs_needed, name="settings_runs_needed"),
    path("settings/fixture-pin/", settings_views.fixture_pin, name="settings_fixture_pin"),
    path("settings/tier-rules/", settings_views.tier_rule_add, name="settings_tier_rule_add"),
    path(
        "settings/tier-rules/preview/",
        settings_views.tier_rule_preview,
        name="settings_tier_rule_preview",
    ),
    path(
        "settings/tier-rules/<int:pk>/remove/",
        settings_views.tier_rule_remove,
        name="settings_tier_rule_remove",
    ),
    path("settings/members/", settings_views.member_set, name="settings_member_set"),
    path(
        "settings/members/<int:pk>/remove/",
        settings_views.member_remove,
        name="settings_member_remove",
    ),
    path("settings/tokens/", settings_views.token_create, name="settings_token_create"),
    path(
        "settings/tokens/<int:pk>/revoke/",
        settings_views.token_revoke,
        name="settings_token_revoke",
    ),
]
