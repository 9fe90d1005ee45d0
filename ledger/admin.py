"""Admin for staff. Whatever changes a ledger goes through the same audited services as
the pages and the API, or is not offered here at all: quarantine entries and members go
through the services, tier rules are added and removed on the settings page, and nodes,
uploads and the audit trail are read-only."""

from django import forms
from django.contrib import admin
from django.contrib.admin.views.main import ERROR_FLAG
from django.core.exceptions import ValidationError
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from flakeboard import rules
from ledger.access import actor_label

from .models import ApiToken, AuditEvent, Membership, Node, QuarantineEntry, Role, Suite, TierRule
from .quarantine import quarantine_create
from .settings_services import _last_lead_error, member_change, member_drop, pin_manifest_clean
from .tokens import token_revoke


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows staff may look at, never add, edit or delete."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class CalendarSafeChangelist:
    """A changelist whose date filter names a moment that is past the calendar's ends once
    it is turned into UTC (``0001-01-01 00:00+14:00``): Django's SQLite backend overflows
    there while the page renders. Such a filter is answered as any invalid filter is, by
    the list again with ``?e=1``, not with a server error."""

    def changelist_view(self, request, extra_context=None):
        try:
            response = super().changelist_view(request, extra_context)
            if hasattr(response, "render"):
                response.render()
        except OverflowError:
            return HttpResponseRedirect(f"{request.path}?{ERROR_FLAG}=1")
        return response


class MembershipForm(forms.ModelForm):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            # Handing a membership to someone else would be an unaudited remove and add.
            self.fields["user"].disabled = True


class MembershipFormSet(forms.BaseInlineFormSet):
    def clean(self):
        # The services refuse to drop the last lead one change at a time; checking the
        # result of the whole save here lets a lead step down while naming a successor.
        super().clean()
        if self.instance.pk is None or any(self.errors):
            return
        kept = [f for f in self.forms if f.has_changed() or f.instance.pk]
        if any(f.cleaned_data.get("role") == Role.LEAD
               for f in kept if not self._should_delete_form(f)):
            return
        if self.instance.memberships.filter(role=Role.LEAD).exists():
            raise _last_lead_error(self.instance)


class MembershipInline(admin.TabularInline):
    model = Membership
    form = MembershipForm
    formset = MembershipFormSet
    extra = 1
    autocomplete_fields = ["user"]


class SuiteForm(forms.ModelForm):
    def clean(self):
        # A new suite's pin (later ones are set on the settings page) is taken as the
        # settings page takes it: canonical, or refused.
        cleaned = super().clean()
        if "fixture_manifest" in cleaned:
            cleaned["fixture_manifest"] = pin_manifest_clean(cleaned["fixture_manifest"])
        return cleaned


@admin.register(Suite)
class SuiteAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "max_upper_rate", "min_runs", "max_quarantined_share"]
    search_fields = ["slug", "name"]
    form = SuiteForm
    inlines = [MembershipInline]
    # Policy and the fixture pin change gate results: they change on the settings page,
    # whose service writes the audit event and bumps the ledger revision.
    audited_fields = [
        "max_upper_rate", "min_runs", "max_quarantined_share", "max_quarantine_days",
        "fixture_manifest", "fixture_seed",
    ]

    def get_readonly_fields(self, request, obj=None):
        # The JUnit infrastructure share (80% unless changed), the count that makes an
        # entry ready to clear and the default branch (whose CI runs size the test set)
        # are suite settings too: like the policy, they are not changed here, unaudited
        # (a new suite takes the default).
        fixed = ["ledger_revision", "created_at", "junit_infrastructure_share",
                 "clear_after_clean_measurements", "default_branch", "new_test_runs",
                 "new_test_share", "measure_budget"]
        return fixed if obj is None else [*fixed, "settings_page", *self.audited_fields]

    @admin.display(description="Settings page")
    def settings_page(self, obj):
        return format_html('<a href="{}">{}</a>', reverse("settings", args=[obj.slug]),
                           "Policy, tier rules, fixture pin and tokens")

    def has_delete_permission(self, request, obj=None):
        return False  # it would take the suite's uploads and audit trail with it

    def save_formset(self, request, form, formset, change):
        if formset.model is not Membership:
            return super().save_formset(request, form, formset, change)
        formset.save(commit=False)  # only sorts rows into new, changed and deleted
        suite, actor = form.instance, actor_label(request.user)
        changed = [*formset.new_objects, *(obj for obj, _ in formset.changed_objects)]
        # New leads first, so that a lead stepping down is never the last one meanwhile.
        for membership in sorted(changed, key=lambda m: m.role != Role.LEAD):
            member_change(suite=suite, username=membership.user.get_username(),
                          role=membership.role, actor=actor)
        for membership in formset.deleted_objects:
            # Reread: the posted row may carry a role it never had.
            member_drop(membership=Membership.objects.get(pk=membership.pk), actor=actor)


@admin.register(Node)
class NodeAdmin(ReadOnlyAdmin):
    """Nodes come from uploads, and their tier from the tier rules (an upload's stated tier
    is kept beside it, never deciding): a node edited or deleted here would leave its
    entries, measurements and the ledger revision behind."""

    list_display = ["nodeid", "suite", "tier", "stated_tier", "last_seen"]
    list_filter = ["suite", "tier"]
    search_fields = ["nodeid"]


@admin.register(TierRule)
class TierRuleAdmin(ReadOnlyAdmin):
    """Rules are added and removed on the suite's settings page, which re-tiers the nodes,
    bumps the ledger revision, writes the audit event and first shows the entries a rule
    would turn into tier violations."""

    list_display = ["glob", "tier", "suite", "created_by", "created_at", "settings_page"]
    list_filter = ["suite", "tier"]
    list_select_related = ["suite"]

    @admin.display(description="Change on")
    def settings_page(self, obj):
        url = reverse("settings", args=[obj.suite.slug]) + "#tier-rules"
        return format_html('<a href="{}">{}</a>', url, "settings page")


class EntryCreateForm(forms.ModelForm):
    nodeid = forms.CharField(label="Node id", max_length=1000)
    # The counts' bounds, as on the quarantine form: _post_clean below skips the model's
    # validation, so nothing else keeps a huge count from the database.
    n = forms.IntegerField(min_value=0, max_value=rules.COUNT_MAX, initial=0)
    fails = forms.IntegerField(min_value=0, max_value=rules.COUNT_MAX, initial=0)

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
class QuarantineEntryAdmin(CalendarSafeChangelist, admin.ModelAdmin):
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
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ["at", "suite", "action", "actor", "entry", "note"]
    list_filter = ["suite", "action"]
    search_fields = ["actor", "note"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "suite", "scope", "default_branch_only", "name", "last_used_at",
                    "revoked_at"]
    list_filter = ["suite", "scope", "default_branch_only"]
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
