from django.contrib import admin

from ledger.admin import ReadOnlyAdmin

from .models import Tracker, TrackerIssue, TrackerJob


@admin.register(Tracker)
class TrackerAdmin(ReadOnlyAdmin):
    # The encrypted token is left out: the admin never shows it.
    fields = ("suite", "kind", "site", "project", "issue_type", "email", "labels",
              "on_new_entry", "on_ci_flaky", "on_born_flaky", "cursor", "created_at",
              "created_by", "last_error", "last_error_at")
    list_display = ("suite", "kind", "project", "last_error_at")


@admin.register(TrackerIssue)
class TrackerIssueAdmin(ReadOnlyAdmin):
    list_display = ("entry", "node", "kind", "key", "url", "closed")


@admin.register(TrackerJob)
class TrackerJobAdmin(ReadOnlyAdmin):
    list_display = ("suite", "key", "status", "attempts", "response_code", "updated_at")
    list_filter = ("status", "action")
