"""The flaky-tests page's filters: the JUnit window's, the kind of flaky evidence, and the
category of its diagnosis."""

from __future__ import annotations

from django import forms

from junit.forms import FlakyFilterForm

from .categories import CATEGORY_WORDS
from .flaky import EVIDENCE


class FlakyPageForm(FlakyFilterForm):
    evidence = forms.ChoiceField(
        label="Evidence", required=False,
        choices=[("", "All evidence"), *EVIDENCE.items()],
    )

    category = forms.ChoiceField(
        label="Why flaky", required=False,
        choices=[("", "Any category"), *((c.value, w.label) for c, w in CATEGORY_WORDS.items())],
    )

    def count_categories(self, counts) -> None:
        """Each category's choice says how many of the listed tests it holds
        (``CategoryCounts.counts``)."""
        total = sum(count for _, _, count in counts)
        self.fields["category"].choices = [("", f"Any category ({total})"), *(
            (category, f"{label} ({count})") for category, label, count in counts)]

    @property
    def category_chosen(self) -> str:
        """The category chosen ("" for all; an unknown one is ignored, never an error)."""
        self.is_valid()
        return self.cleaned_data.get("category") or ""

    @property
    def evidence_kind(self) -> str:
        """The kind chosen ("" for all; an unknown one is ignored, never an error)."""
        self.is_valid()
        return self.cleaned_data.get("evidence") or ""

    @property
    def active_filters(self) -> bool:
        return super().active_filters or bool(self.evidence_kind or self.category_chosen)
