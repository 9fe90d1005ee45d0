"""The trends page (``runs.views.trends``) with the board's chart for leads: the flaky tests
over time by why they are flaky (``board.diagnosis_trends``), which reads both apps'
evidence and the diagnosis."""

from __future__ import annotations

from board.diagnosis_trends import category_chart
from runs.views.trends import over_a_period, trends_csv_answer, trends_page


def _more(suite, period, today) -> list:
    return [category_chart(suite, period, period.bucket, today=today)]


@over_a_period
def trends(request, suite, form, period, today):
    return trends_page(request, suite, form, period, today, more=_more)


@over_a_period
def trends_csv(request, suite, form, period, today, chart):
    return trends_csv_answer(request, suite, form, period, today, chart, more=_more)
