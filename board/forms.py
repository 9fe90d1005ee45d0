"""The flaky-tests page's filters: the JUnit window's, and the kind of flaky evidence."""

from __future__ import annotations

from django import forms

from junit.forms import FlakyFilterForm

from .flaky import EVIDENCE


class FlakyPageForm(FlakyFilterForm):
    evidence = forms.ChoiceField(
        label="Evidence", required=False,
        choices=[("", "All evidence"), *EVIDENCE.items()],
    )

    @property
    def evidence_kind(self) -> str:
        """The kind chosen ("" for all; an unknown one is ignored, never an error)."""
        self.is_valid()
        return self.cleaned_data.get("evidence") or ""

    @property
    def active_filters(self) -> bool:
        return super().active_filters or bool(self.evidence_kind)
