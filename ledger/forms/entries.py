"""Forms of the ledger page (its filters) and of an entry (create, renew, clear).

They parse input and nothing more: every quarantine rule is enforced by the services of
ledger.quarantine, whose refusals the views put back on the fields they name
(``form.add_error(None, exc)``). So no field here is ``required``: a missing owner,
expiry or piece of evidence is refused by the service, in its words.
"""

from __future__ import annotations

from datetime import date

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db.models import Q

from flakeboard import rules

from ..codeowners import OwnerOffer, Unowned, entries_owned_by
from ..models import QuarantineEntry

STATE_LABELS = {
    rules.EntryState.ACTIVE: "Active",
    rules.EntryState.EXPIRING: "Expiring",
    rules.EntryState.EXPIRED: "Expired",
    rules.EntryState.CLEARED: "Cleared",
    rules.EntryState.TIER_VIOLATION: "Tier violation",
}
OPEN = "open"


def _date_input(today: date, max_days: int) -> forms.DateInput:
    earliest, latest = rules.expiry_bounds(today, max_days)
    return forms.DateInput(
        format="%Y-%m-%d",
        attrs={"type": "date", "min": earliest.isoformat(), "max": latest.isoformat()},
    )


def _text(**attrs) -> forms.TextInput:
    return forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false", **attrs})


def _note(rows: int = 2) -> forms.Textarea:
    return forms.Textarea(attrs={"rows": rows})


OWNER_HELP = "A @handle such as @finley, or an e-mail address."
EVIDENCE_HELP = "A CI run reference such as ci/run-88213, or an http(s) URL."
# Why the create form offers the signed-in user as the owner.
UNOWNED_HELP = {
    Unowned.NO_FILE: "since the suite has no CODEOWNERS",
    Unowned.NO_NODE: "as no node id is given yet",
    Unowned.NO_PATH: "since this node id names no file for CODEOWNERS to match",
    Unowned.NO_OWNER: "since CODEOWNERS names no owner for this path",
}


def offer_help(offer: OwnerOffer) -> str:
    """Where the create form's offered owner came from, said after the field's help."""
    if offer.rule is not None:
        line = " ".join((offer.rule.pattern, *offer.rule.owners))
        return f"Offered from CODEOWNERS, line {offer.rule.line}: {line}."
    if offer.unowned is not None:
        return f"Offered: you, the signed-in user, {UNOWNED_HELP[offer.unowned]}."
    return "Offered by the link that opened this form."


class ServiceForm(forms.Form):
    def add_refusal(self, exc: ValidationError) -> None:
        """Put a service's refusals on the fields they name; others go above the form."""
        if not hasattr(exc, "error_dict"):
            self.add_error(None, exc)
            return
        errors: dict[str, list] = {}
        for name, messages in exc.error_dict.items():
            errors.setdefault(name if name in self.fields else NON_FIELD_ERRORS, []).extend(
                messages
            )
        self.add_error(None, ValidationError(errors))


class QuarantineForm(ServiceForm):
    """Create an entry: quarantine_create's arguments, named after the fields it refuses."""

    node = forms.CharField(label="Node id", required=False, widget=_text())
    owner = forms.CharField(required=False, help_text=OWNER_HELP, widget=_text())
    expires = forms.DateField(label="Expires on", required=False)
    evidence = forms.CharField(required=False, help_text=EVIDENCE_HELP, widget=_text())
    note = forms.CharField(required=False, widget=_note(3))
    n = forms.IntegerField(
        label="Runs (n)", required=False, min_value=0, max_value=rules.COUNT_MAX
    )
    fails = forms.IntegerField(
        label="Failures", required=False, min_value=0, max_value=rules.COUNT_MAX
    )
    upper95 = forms.FloatField(
        label="upper95 as reported", required=False, min_value=0, max_value=1,
        help_text="The board recomputes the Wilson bound from n and failures; "
        "a reported value that differs is flagged.",
    )
    seed_base = forms.IntegerField(
        required=False, min_value=rules.SEED_MIN, max_value=rules.SEED_MAX
    )
    # The owner last offered: while the owner field still holds it, a new node id's offer
    # may replace it (the view's htmx answer); once someone types over it, it stays.
    offered = forms.CharField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, today: date, max_days: int, offer: OwnerOffer | None = None,
                 **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["expires"].widget = _date_input(today, max_days)
        self.fields["expires"].help_text = (
            f"After today, at most {max_days} days ahead."
        )
        if offer is not None:
            self.initial.update(owner=offer.owner, offered=offer.owner)
            self.fields["owner"].help_text = f"{OWNER_HELP} {offer_help(offer)}"

    def service_arguments(self) -> dict:
        data = self.cleaned_data
        return {
            "nodeid": data["node"],
            "owner": data["owner"],
            "expires": data["expires"],
            "evidence": data["evidence"],
            "note": data["note"],
            "n": data["n"] or 0,
            "fails": data["fails"] or 0,
            "reported_upper95": data["upper95"],
            "seed_base": data["seed_base"],
        }


class RenewForm(ServiceForm):
    """Renew an entry: a new expiry and new evidence; owner and note optional."""

    expires = forms.DateField(label="New expiry", required=False)
    evidence = forms.CharField(
        label="New evidence", required=False, widget=_text(),
        help_text="Must differ from the current evidence. " + EVIDENCE_HELP,
    )
    owner = forms.CharField(required=False, help_text=OWNER_HELP, widget=_text())
    note = forms.CharField(required=False, widget=_note())

    def __init__(self, *args, today: date, max_days: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["expires"].widget = _date_input(today, max_days)

    def service_arguments(self) -> dict:
        data = self.cleaned_data
        return {
            "expires": data["expires"],
            "evidence": data["evidence"],
            "owner": data["owner"] or None,
            "note": data["note"],
        }


class EntryIdsField(forms.Field):
    """Entry ids, as many as the form posts under the field's name."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value) -> list[int]:
        try:
            return [int(v) for v in value or []]
        except (TypeError, ValueError):
            raise ValidationError("An entry id is a whole number.", code="invalid") from None


class BulkForm(RenewForm):
    """Renew or clear the selected entries of the ledger page, with one reason. The
    selection is the checked rows (``entry``), or with ``select_page`` every row the page
    showed (``shown``); a renewal's fields are RenewForm's, and a clearance ignores them."""

    action = forms.ChoiceField(choices=[("renew", "Renew"), ("clear", "Clear")])
    entry = EntryIdsField(required=False)
    shown = EntryIdsField(required=False)
    select_page = forms.BooleanField(
        label="Select all on this page", required=False,
        widget=forms.CheckboxInput(attrs={"data-select-page": ""}),
    )

    field_order = ["expires", "evidence", "owner", "note"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, auto_id="id_bulk_%s", **kwargs)
        self.fields["expires"].help_text = "Renewals only."
        self.fields["evidence"].help_text = "Renewals only; must differ from each entry's."
        self.fields["owner"].help_text = "Renewals only; else each keeps its owner."
        self.fields["note"].label = "Reason"
        self.fields["note"].help_text = "Goes on each entry's history."
        self.fields["note"].widget = _text()

    def entry_ids(self) -> list[int]:
        data = self.cleaned_data
        return data["shown"] if data["select_page"] else data["entry"]


class ClearForm(ServiceForm):
    note = forms.CharField(
        label="Why is it cleared?", required=False, widget=_note(),
        help_text="For example: fixed the race in the retry loop, or the test was deleted.",
    )


class LedgerFilterForm(forms.Form):
    """The ledger page's filters. Invalid values are ignored, never an error page."""

    STATES = [(OPEN, "All open"), *((state.value, label) for state, label in STATE_LABELS.items())]
    SORTS = [("expires", "Soonest expiry"), ("-expires", "Latest expiry")]

    state = forms.ChoiceField(choices=STATES, required=False)
    q = forms.CharField(
        label="Search", required=False,
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "node id, evidence, note"}),
    )
    owner = forms.ChoiceField(required=False)
    codeowner = forms.ChoiceField(label="Code owner", required=False)
    mine = forms.BooleanField(label="Only mine", required=False)
    ready = forms.BooleanField(label="Only ready to clear", required=False)
    sort = forms.ChoiceField(label="Sort by", choices=SORTS, required=False)

    def __init__(self, *args, owners: list[str],
                 codeowners: rules.Codeowners | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.codeowners = codeowners or rules.Codeowners()
        self.fields["owner"].choices = [("", "Any owner"), *((o, o) for o in owners)]
        named = sorted(self.codeowners.owners, key=str.casefold)
        self.fields["codeowner"].choices = [("", "Any code owner"), *((o, o) for o in named)]

    def value(self, name: str):
        """A field's cleaned value, or its default when absent or invalid."""
        self.is_valid()
        return self.cleaned_data.get(name) or {"state": OPEN, "sort": "expires"}.get(name)

    def entries(self, entries, *, today: date, handle: str):
        """Apply the filters to a QuarantineEntry queryset."""
        state = self.value("state")
        if state == OPEN:
            entries = entries.open()
        else:
            entries = entries.in_state(rules.EntryState(state), today)
        if owner := self.value("owner"):
            entries = entries.filter(owner=owner)
        if codeowner := self.value("codeowner"):
            entries = entries_owned_by(self.codeowners, entries, codeowner)
        if self.value("mine"):
            entries = entries.filter(owner=handle)
        if self.value("ready"):
            entries = entries.ready_to_clear()
        if text := self.value("q"):
            entries = entries.filter(
                Q(node__nodeid__icontains=text) | Q(owner__icontains=text)
                | Q(evidence__icontains=text) | Q(note__icontains=text)
            )
        return entries.order_by(self.value("sort"), "node__nodeid", "pk")

    @property
    def state_value(self) -> str:
        return self.value("state")

    @property
    def active_filters(self) -> bool:
        return any(self.value(name) for name in ("q", "owner", "codeowner", "mine", "ready"))


def owners_of(suite) -> list[str]:
    """Every owner the suite's entries name, for the owner filter."""
    owners = (
        QuarantineEntry.objects.filter(suite=suite)
        .order_by("owner").values_list("owner", flat=True).distinct()
    )
    return list(owners)
