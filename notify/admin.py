"""The delivery log, for staff: read-only, like every other record of what happened."""

from django.contrib import admin

from ledger.admin import ReadOnlyAdmin

from .models import Delivery, Webhook, WebhookPost


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyAdmin):
    list_display = ("day", "suite", "recipient", "kind", "key", "status", "attempts", "sent_at")
    list_filter = ("status", "kind", "channel", "day")
    search_fields = ("recipient", "key")


@admin.register(WebhookPost)
class WebhookPostAdmin(ReadOnlyAdmin):
    list_display = ("at", "suite", "test", "items", "status", "attempts", "response_code")
    list_filter = ("status", "test")


@admin.register(Webhook)
class WebhookAdmin(ReadOnlyAdmin):
    """Set on the settings page or with set_webhook (audited); the secret is never shown."""

    list_display = ("suite", "url", "format", "created_at", "created_by")
    fields = ("suite", "url", "format", "created_at", "created_by")
