"""JUnit files are evidence: staff may read them here, never edit or delete them (a
deleted file would leave the rollups disagreeing with the rows, unaudited)."""

from django.contrib import admin

from ledger.admin import ReadOnlyAdmin

from .models import CaseResult, JUnitFile


@admin.register(JUnitFile)
class JUnitFileAdmin(ReadOnlyAdmin):
    list_display = ["id", "suite", "created_at", "commit", "job", "attempt", "producer",
                    "testcases", "failed", "reruns", "infrastructure_reason"]
    list_filter = ["suite", "producer", "infrastructure_reason"]
    search_fields = ["commit", "branch", "job"]


@admin.register(CaseResult)
class CaseResultAdmin(ReadOnlyAdmin):
    list_display = ["node", "file", "outcome", "attempts", "failures", "signature"]
    list_filter = ["outcome"]
    list_select_related = ["node", "file"]
    raw_id_fields = ["file", "node"]
