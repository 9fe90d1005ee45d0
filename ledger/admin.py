"""Admin for staff. Quarantine entries are created through the same service as the form
and the API, so every rule holds here too; the audit trail is read-only."""

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.utils import timezone

from .access import actor_label
from .models import ApiToken, AuditEvent, Membership, Node, QuarantineEntry, Suite, TierRule
from .quarantine import quarantine_create
from .tokens import token_revoke


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]


@admin.register(Suite)
class SuiteAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "max_upper_rate", "min_runs", "max_quarantined_share"]
    search_fields = ["slug", "name"]
    inlines = [MembershipInline]
    # Policy and the fixture pin change gate results: they change on the settings page,
    # whose service writes the audit event and bumps the ledger revision.
    audited_fields = [
        "max_upper_rate", "min_runs", "max_quarantined_share", "max_quarantine_days",
        "fixture_manifest", "fixture_seed",
    ]

    def get_readonly_fields(self, request, obj=None):
        fixed = ["ledger_revision", "created_at"]
        return fixed if obj is None else [*fixed, *self.audited_fields]


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ["nodeid", "suite", "tier", "stated_tier", "last_seen"]
    list_filter = ["suite", "tier"]
    search_fields = ["nodeid"]
    readonly_fields = ["tier", "first_seen", "last_seen"]


@admin.register(TierRule)
class TierRuleAdmin(admin.ModelAdmin):
    list_display = ["glob", "tier", "suite", "created_by", "created_at"]
    list_filter = ["suite", "tier"]

    def has_change_permission(self, request, obj=None):
        return False  # rules are added or removed through the settings page


class EntryCreateForm(forms.ModelForm):
    nodeid = forms.CharField(label="Node id", max_length=1000)

    class Meta:
        model = QuarantineEntry
        fields = ["suite", "owner", "expires", "evidence", "note", "n", "fails", "seed_base"]

    def __init__(self, *args, actor="admin", **kwargs):
        super().__init__(*args, **kwargs)
        self.actor = actor

    def _post_clean(self):
        # The service, not the model form, decides and stores: every quarantine rule holds.
        if self.errors:
            return
        data = self.cleaned_data
        try:
            self.instance = quarantine_create(
                suite=data["suite"],
                nodeid=data["nodeid"],
                owner=data["owner"],
                expires=data["expires"],
                evidence=data["evidence"],
                note=data.get("note") or "",
                n=data.get("n") or 0,
                fails=data.get("fails") or 0,
                seed_base=data.get("seed_base"),
                actor=self.actor,
                today=timezone.now().date(),
            )
        except ValidationError as exc:
            errors = exc.message_dict
            if "node" in errors:
                errors["nodeid"] = errors.pop("node")
            self._update_errors(ValidationError(errors))


@admin.register(QuarantineEntry)
class QuarantineEntryAdmin(admin.ModelAdmin):
    list_display = ["node", "suite", "owner", "expires", "renewals", "cleared_at"]
    list_filter = ["suite", "cleared_at"]
    search_fields = ["node__nodeid", "owner", "evidence"]
    list_select_related = ["node", "suite"]

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            form = EntryCreateForm

            class BoundForm(form):
                def __init__(self, *args, **kw):
                    super().__init__(*args, actor=actor_label(request.user), **kw)

            return BoundForm
        return super().get_form(request, obj, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        return [f.name for f in QuarantineEntry._meta.fields]

    def save_model(self, request, obj, form, change):
        pass  # stored by quarantine_create in the form

    def has_delete_permission(self, request, obj=None):
        return False  # entries are cleared, never deleted: they stay in history


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["at", "suite", "action", "actor", "entry", "note"]
    list_filter = ["suite", "action"]
    search_fields = ["actor", "note"]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in AuditEvent._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "suite", "scope", "name", "last_used_at", "revoked_at"]
    list_filter = ["suite", "scope"]
    actions = ["revoke"]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in ApiToken._meta.fields]

    def has_add_permission(self, request):
        return False  # created on the settings page or with create_token, shown once

    def has_delete_permission(self, request, obj=None):
        return False  # revoked, never deleted: the audit trail names it

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset):
        for token in queryset:
            token_revoke(token=token, actor=actor_label(request.user))
