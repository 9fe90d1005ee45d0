"""Uploads are evidence: staff may read them here, never edit or delete them. A deleted
upload would leave the trends and rollups disagreeing with the stored rows, unaudited."""

from django.contrib import admin

from ledger.admin import ReadOnlyAdmin

from .models import Measurement, NodeVerdict, ReasonRollup, Report, VerdictBatch


def upload_admin(*, outcome: str, rows: str) -> type[ReadOnlyAdmin]:
    """A list of reports or of batches: when each came, what the gate answered, its rows."""

    class UploadAdmin(ReadOnlyAdmin):
        list_display = ["id", "suite", "created_at", outcome, "reason", rows]
        list_filter = ["suite", outcome]

    return UploadAdmin


def row_admin(*, upload: str, outcome: str, figures=(), raw_ids=()) -> type[ReadOnlyAdmin]:
    """A list of an upload's rows: each node, its figures and what the gate answered."""

    class RowAdmin(ReadOnlyAdmin):
        list_display = ["node", upload, *figures, outcome, "reason"]
        list_filter = [outcome, "reason"]
        list_select_related = ["node", upload]
        raw_id_fields = [upload, "node", *raw_ids]

    return RowAdmin


admin.site.register(Report, upload_admin(outcome="status", rows="measurement_count"))
admin.site.register(Measurement, row_admin(
    upload="report", outcome="status", figures=["n", "fails", "upper95"], raw_ids=["entry"]
))
admin.site.register(VerdictBatch, upload_admin(outcome="verdict", rows="record_count"))
admin.site.register(NodeVerdict, row_admin(upload="batch", outcome="verdict"))


@admin.register(ReasonRollup)
class ReasonRollupAdmin(ReadOnlyAdmin):
    list_display = ["suite", "day", "source", "reason", "count"]
    list_filter = ["suite", "source", "reason"]
