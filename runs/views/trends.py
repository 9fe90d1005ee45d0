"""The trends page: reason codes over time, their accumulation and distribution, and the
quarantined share; every chart with its table and a CSV download of the same numbers. The
board serves it (``board.views.trends``), adding the charts that read more than this app."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from functools import wraps
from urllib.parse import urlencode

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import redirect
from django.utils import timezone
from django.views.decorators.http import require_GET

from flakeboard.rules import trends_range as ranges
from ledger.access import suite_for
from web.csv import csv_response
from web.pages import render_page, wants_partial

from ..trend_counts import BUCKETS
from ..trends import Chart, trend_charts

PRESETS = (7, ranges.DEFAULT_RANGE_DAYS, 90, 365)
WEEKLY_AFTER_DAYS = 90  # a longer range is drawn per week unless the day is asked for
AUTO_BUCKET = f"per day, per week beyond {WEEKLY_AFTER_DAYS} days"
SHOWN = ("shown_from", "shown_to")  # the days the form's inputs showed, sent back hidden


@dataclass(frozen=True)
class Period(ranges.DayRange):
    """The range of days shown (DayRange's start, end and days) and how it is shown."""

    bucket: str
    include_clean: bool
    preset: str  # "7", "30", "90", "365" or "custom"
    bucket_asked: str = ""  # "" when the bucket follows the range (AUTO_BUCKET)

    @property
    def query(self) -> str:
        """The URL query that shows this period again: the canonical one, with no date of
        a preset range and no bucket the range chose itself."""
        params = {"range": self.preset}
        if self.bucket_asked:
            params["bucket"] = self.bucket_asked
        if self.preset == "custom":
            params.update({"from": self.start.isoformat(), "to": self.end.isoformat()})
        if self.include_clean:
            params["with_clean"] = "1"
        return urlencode(params)


class TrendsForm(forms.Form):
    """The page's query: a preset range, or from and to for a custom one.

    The form sends from and to along with every preset, and shown_from and shown_to, the
    days its inputs showed. Days that differ from those were typed: they make the range
    custom, whatever the Range select says (a date input needs no "custom range" first,
    with or without JavaScript); the days a preset showed, sent back unchanged, leave the
    preset to recompute them. A query without shown_from and shown_to (a link written by
    hand) compares from and to with the chosen preset's own days instead.
    """

    range = forms.ChoiceField(
        choices=[(str(d), f"last {d} days") for d in PRESETS] + [("custom", "custom range")],
        required=False,
        error_messages={"invalid_choice": "Choose one of the listed ranges."},
    )
    bucket = forms.ChoiceField(
        choices=[("", AUTO_BUCKET)] + [(b, f"per {b}") for b in BUCKETS],
        required=False,
        error_messages={"invalid_choice": "Choose per day or per week."},
    )
    with_clean = forms.BooleanField(required=False, label="show clean and within_budget")

    def __init__(self, *args, today: date, **kwargs):
        super().__init__(*args, **kwargs)
        self.today = today
        # "from" is a Python keyword, so neither can be a class attribute. Kept as text:
        # day_range reads them, for this page as for the API.
        for name in ("from", "to"):
            self.fields[name] = forms.CharField(required=False, strip=False)

    @property
    def custom(self) -> bool:
        chosen = self.data.get("range")
        if chosen == "custom":
            return True
        if not chosen:
            return any(self.data.get(name) for name in ("from", "to"))
        if chosen not in {str(days) for days in PRESETS}:
            return False  # not a listed range: the form's errors say so
        return self._days_typed(int(chosen))

    def _days_typed(self, preset: int) -> bool:
        sent = tuple(self.data.get(name) or "" for name in ("from", "to"))
        if not any(sent):
            return False
        if any(name in self.data for name in SHOWN):
            showed = tuple(self.data.get(name) or "" for name in SHOWN)
        else:
            days = ranges.last_days(preset, self.today)
            showed = (days.start.isoformat(), days.end.isoformat())
        return sent != showed

    def clean(self):
        data = super().clean()
        chosen = data.get("range")
        if chosen and not self.custom:
            data["dates"] = ranges.last_days(int(chosen), self.today)
            return data
        # An empty date input is how a form says "not set": the default fills it in.
        found = ranges.day_range(data.get("from") or None, data.get("to") or None, today=self.today)
        if isinstance(found, ranges.RangeError):
            self.add_error(found.parameter, found.message)
        else:
            data["dates"] = found
        return data

    def period(self) -> Period | None:
        """The period asked for, or None when the query is refused (see the errors)."""
        if not self.is_valid():
            return None
        data = self.cleaned_data
        dates: ranges.DayRange = data["dates"]
        preset = "custom" if self.custom else data["range"] or str(ranges.DEFAULT_RANGE_DAYS)
        bucket = data["bucket"] or ("week" if dates.days > WEEKLY_AFTER_DAYS else "day")
        return Period(dates.start, dates.end, bucket, data["with_clean"], preset,
                      data["bucket"] or "", end_asked=dates.end_asked)

    def messages(self) -> list[str]:
        return [message for errors in self.errors.values() for message in errors]


def _renamed(request) -> str | None:
    """This URL with start and end renamed from and to (the page's old names, still in
    bookmarks), or None when it has neither."""
    if not any(name in request.GET for name in ranges.RENAMED_PARAMETERS):
        return None
    pairs = []
    for name, values in request.GET.lists():
        if name in ranges.RENAMED_PARAMETERS:
            name = ranges.RENAMED_PARAMETERS[name]
            if name in request.GET:  # sent under both names: the new one wins
                continue
        pairs += [(name, value) for value in values]
    return f"{request.path}?{urlencode(pairs)}"


def _charts(suite, period: Period, today: date):
    return trend_charts(
        suite, start=period.start, end=period.end, bucket=period.bucket,
        include_clean=period.include_clean, today=today,
    )


# More charts a page adds to the trends (``board`` draws the flaky tests by category): a
# function of the suite, the period and today that gives them.
MoreCharts = Callable[[object, Period, date], list[Chart]]


def over_a_period(view):
    """A trends view: it receives the viewer's suite, the query's form and its period
    (None when the query is wrong), and today. A query in the old names is redirected first."""

    @login_required
    @require_GET
    @wraps(view)
    def read(request, suite, **kwargs):
        suite = suite_for(request, suite)
        if renamed := _renamed(request):
            return redirect(renamed)
        today = timezone.now().date()
        form = TrendsForm(request.GET, today=today)
        return view(request, suite, form, form.period(), today, **kwargs)

    return read


def trends_page(request, suite, form, period, today, more: MoreCharts | None = None):
    """The trends page, with ``more`` charts after the reason codes' when given."""
    custom = form.custom
    if period is not None:
        shown = {"range": period.preset, "from": period.start.isoformat(),
                 "to": period.end.isoformat(), "bucket": period.bucket_asked,
                 "with_clean": period.include_clean}
    else:  # the query as sent, for the visitor to correct
        shown = {name: form[name].value() for name in ("range", "from", "to", "bucket",
                                                         "with_clean")}
        shown["range"] = "custom" if custom else shown["range"]
    context = {
        "suite": suite,
        "nav": "trends",
        "form": form,
        "period": period,
        "shown": shown,
        "earliest": ranges.EARLIEST_DAY.isoformat(),
        "latest": ranges.latest_to(today).isoformat(),
        "max_days": ranges.MAX_RANGE_DAYS,
        "charts": _charts(suite, period, today) if period is not None else None,
        "more": more(suite, period, today) if period is not None and more else [],
    }
    response = render_page(request, "runs/trends.html", context, partial="charts")
    if period is not None and wants_partial(request):
        # The address bar gets the canonical query, not the form's every field.
        response["HX-Push-Url"] = f"{request.path}?{period.query}"
    if period is None:
        response.status_code = 400
        if wants_partial(request):
            # htmx swaps no 4xx answer in place: have it load the whole page, which
            # shows the errors beside the fields to correct.
            response["HX-Redirect"] = request.get_full_path()
    return response


def trends_csv_answer(request, suite, form, period, today, chart,
                      more: MoreCharts | None = None):
    """A chart's CSV, ``more``'s charts included."""
    if period is None:
        return HttpResponseBadRequest("\n".join(form.messages()) + "\n",
                                      content_type="text/plain; charset=utf-8")
    found = _charts(suite, period, today).by_key().get(chart)
    if found is None and more:
        found = next((extra for extra in more(suite, period, today) if extra.key == chart),
                     None)
    if found is None:
        raise Http404("No such chart.")
    filename = f"{suite.slug}-{found.key}-{period.start}-{period.end}-{period.bucket}.csv"
    return csv_response(filename, found.header, found.rows)

