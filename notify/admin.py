"""The delivery log, for staff: read-only, like every other record of what happened."""

from django.contrib import admin

from ledger.admin import ReadOnlyAdmin

from .models import Delivery


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyAdmin):
    list_display = ("day", "suite", "recipient", "kind", "key", "status", "attempts", "sent_at")
    list_filter = ("status", "kind", "channel", "day")
    search_fields = ("recipient", "key")
