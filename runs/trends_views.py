"""The trends page: reason codes over time, their accumulation and distribution, and the
quarantined share; every chart with its table and a CSV download of the same numbers."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from datetime import date, timedelta
from urllib.parse import urlencode

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from ledger.access import suite_for
from ledger.views_common import render_page

from .trends import BUCKETS, trend_charts

PRESETS = (7, 30, 90, 365)
DEFAULT_DAYS = 90
MAX_DAYS = 3 * 366


@dataclass(frozen=True)
class Period:
    start: date
    end: date
    bucket: str
    include_clean: bool
    preset: str  # "7", "30", "90", "365" or "custom"

    @property
    def query(self) -> str:
        """The URL query that shows this period again."""
        params = {"range": self.preset, "bucket": self.bucket}
        if self.preset == "custom":
            params.update(start=self.start.isoformat(), end=self.end.isoformat())
        if self.include_clean:
            params["with_clean"] = "1"
        return urlencode(params)

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1


class TrendsForm(forms.Form):
    range = forms.ChoiceField(
        choices=[(str(d), f"last {d} days") for d in PRESETS] + [("custom", "custom range")],
        required=False,
    )
    start = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    end = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    bucket = forms.ChoiceField(choices=[(b, f"per {b}") for b in BUCKETS], required=False)
    with_clean = forms.BooleanField(required=False, label="show clean and within_budget")

    def __init__(self, *args, today: date, **kwargs):
        super().__init__(*args, **kwargs)
        self.today = today

    def clean_end(self):
        end = self.cleaned_data.get("end")
        if end is not None and end > self.today:
            raise forms.ValidationError(f"The range ends today ({self.today}) at the latest.")
        return end

    def clean(self):
        data = super().clean()
        if data.get("range") != "custom":
            return data
        start, end = data.get("start"), data.get("end")
        if start is None or end is None:
            raise forms.ValidationError("A custom range needs a first and a last day.")
        if start > end:
            raise forms.ValidationError("The first day must not be after the last day.")
        if (end - start).days + 1 > MAX_DAYS:
            raise forms.ValidationError(f"A range may span at most {MAX_DAYS} days.")
        return data

    def period(self) -> Period:
        """The period asked for, or the last DEFAULT_DAYS days when the form is invalid."""
        data = self.cleaned_data if self.is_valid() else {}
        preset = data.get("range") or str(DEFAULT_DAYS)
        if preset == "custom":
            start, end = data["start"], data["end"]
        else:
            start, end = self.today - timedelta(days=int(preset) - 1), self.today
        bucket = data.get("bucket") or ("week" if (end - start).days >= DEFAULT_DAYS else "day")
        return Period(start, end, bucket, bool(data.get("with_clean")), preset)


def _period(request, today: date) -> tuple[TrendsForm, Period]:
    form = TrendsForm(request.GET, today=today)
    return form, form.period()


def _charts(suite, period: Period, today: date):
    return trend_charts(
        suite, start=period.start, end=period.end, bucket=period.bucket,
        include_clean=period.include_clean, today=today,
    )


@login_required
@require_GET
def trends(request, suite):
    suite = suite_for(request, suite)
    today = timezone.now().date()
    form, period = _period(request, today)
    custom = form["range"].value() == "custom"
    context = {
        "suite": suite,
        "nav": "trends",
        "form": form,
        "period": period,
        "custom": custom,
        "start_value": (form["start"].value() if custom else None) or period.start.isoformat(),
        "end_value": (form["end"].value() if custom else None) or period.end.isoformat(),
        "charts": _charts(suite, period, today),
    }
    return render_page(request, "runs/trends.html", context, partial="charts")


@login_required
@require_GET
def trends_csv(request, suite, chart):
    suite = suite_for(request, suite)
    today = timezone.now().date()
    _, period = _period(request, today)
    found = _charts(suite, period, today).by_key().get(chart)
    if found is None:
        raise Http404("No such chart.")
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    filename = f"{suite.slug}-{found.key}-{period.start}-{period.end}-{period.bucket}.csv"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    writer = csv.writer(response)
    writer.writerow(found.header)
    writer.writerows(found.rows)
    return response
