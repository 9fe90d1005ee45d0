"""Uploads are evidence: staff may read them here, never edit or delete them. A deleted
upload would leave the trends and rollups disagreeing with the stored rows, unaudited."""

from django.contrib import admin

from .models import Measurement, NodeVerdict, ReasonRollup, Report, VerdictBatch


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Report)
class ReportAdmin(ReadOnlyAdmin):
    list_display = ["id", "suite", "created_at", "status", "reason", "measurement_count"]
    list_filter = ["suite", "status"]


@admin.register(Measurement)
class MeasurementAdmin(ReadOnlyAdmin):
    list_display = ["node", "report", "n", "fails", "upper95", "status", "reason"]
    list_filter = ["status", "reason"]
    list_select_related = ["node", "report"]
    raw_id_fields = ["report", "node", "entry"]


@admin.register(VerdictBatch)
class VerdictBatchAdmin(ReadOnlyAdmin):
    list_display = ["id", "suite", "created_at", "verdict", "reason", "record_count"]
    list_filter = ["suite", "verdict"]


@admin.register(NodeVerdict)
class NodeVerdictAdmin(ReadOnlyAdmin):
    list_display = ["node", "batch", "verdict", "reason"]
    list_filter = ["verdict", "reason"]
    list_select_related = ["node", "batch"]
    raw_id_fields = ["batch", "node"]


@admin.register(ReasonRollup)
class ReasonRollupAdmin(ReadOnlyAdmin):
    list_display = ["suite", "day", "source", "reason", "count"]
    list_filter = ["suite", "source", "reason"]
