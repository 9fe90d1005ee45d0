"""The flaky-tests page's filters. Invalid values are ignored, never an error page."""

from __future__ import annotations

from datetime import date

from django import forms

from .selectors import DEFAULT_WINDOW, WINDOWS, Window


class FlakyFilterForm(forms.Form):
    days = forms.TypedChoiceField(
        label="Window", coerce=int, required=False,
        choices=[(days, f"Last {days} days") for days in WINDOWS],
    )
    branch = forms.ChoiceField(required=False)
    q = forms.CharField(
        label="Search", required=False, max_length=200,
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "node id"}),
    )

    def __init__(self, data=None, *, branches: list[str], **kwargs):
        if data is not None and not data.get("days"):
            data = data.copy()  # the window shown is the one counted
            data["days"] = str(DEFAULT_WINDOW)
        super().__init__(data, **kwargs)
        self.fields["branch"].choices = [("", "All branches"), *((b, b) for b in branches)]

    def window(self, today: date) -> Window:
        self.is_valid()
        data = self.cleaned_data
        return Window(today, data.get("days") or DEFAULT_WINDOW, data.get("branch") or "",
                      (data.get("q") or "").strip())

    @property
    def active_filters(self) -> bool:
        self.is_valid()
        return bool(self.cleaned_data.get("branch") or self.cleaned_data.get("q"))
