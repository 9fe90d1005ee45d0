"""The trends page's chart for leads (issue 51): the flaky tests of each bucket of the range
by the category of their diagnosis, with its table and CSV.

A test counts in a bucket when the board found it flaky on a day of it, as the flaky-tests
page does (it flipped between gate attempts, it was flaky at birth, or a CI job both passed
and failed it in its JUnit file), once per bucket whatever its evidence. It counts under its
diagnosis of today (``board.diagnosis``), not as it was diagnosed then: the board keeps no
history of diagnoses, and a lead asks where the flaky tests of the past weeks point now.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date

from flakeboard.rules.trends import Tone
from flakeboard.rules.trends_range import DayRange, bucket_start, bucket_starts
from junit.selectors import Window, flaky_days
from ledger.models import Node, Suite
from runs.trends import Chart, Column, bucket_days

from .births import birth_rows
from .categories import CATEGORY_WORDS, diagnosed
from .flips import flipped_rows

KEY = "categories"
DESCRIPTION = (
    "The tests found flaky on a day of each bucket (flipped between gate attempts, flaky at "
    "birth, or both passed and failed in one CI job's JUnit file), each counted once a "
    "bucket, by the category of its diagnosis today: the board keeps no past diagnoses. "
    "Random input and order-dependent tests call for test isolation, timing ones for "
    "synchronisation, network ones for fakes of the service, CI-only and one-job ones for "
    "CI's capacity and environment.")


def flaky_per_bucket(suite: Suite, *, start: date, end: date, bucket: str,
                     ) -> tuple[list[date], dict[int, set[int]]]:
    """The buckets of [start, end], and the nodes flaky in each (by the bucket's index):
    three queries."""
    window = Window(end, (end - start).days + 1)
    starts = bucket_starts(start, end, bucket)
    index = {day: i for i, day in enumerate(starts)}
    found: dict[int, set[int]] = defaultdict(set)
    for rows, day_field in ((flipped_rows(suite, window), "batch__day"),
                            (birth_rows(suite, window), "report__day"),
                            (flaky_days(suite, window), "day")):
        for node, day in rows.values_list("node_id", day_field).distinct().order_by():
            found[index[bucket_start(day, bucket)]].add(node)
    return starts, found


def category_chart(suite: Suite, period: DayRange, bucket: str, *, today: date) -> Chart:
    """Flaky tests per bucket of ``period``, stacked by category (nine queries whatever
    the range)."""
    starts, flaky = flaky_per_bucket(suite, start=period.start, end=period.end, bucket=bucket)
    nodes = set().union(*flaky.values())
    shown = diagnosed(suite, Node.objects.filter(pk__in=nodes).only("pk", "nodeid"),
                                 today=today) if nodes else {}
    counts = {category: [0] * len(starts) for category in CATEGORY_WORDS}
    for i, members in flaky.items():
        for node in members:
            counts[shown[node].diagnosis.category][i] += 1
    columns = [Column(words.label, counts[category],
                      tone=Tone.NEUTRAL if category == "unknown" else None)
               for category, words in CATEGORY_WORDS.items()]
    totals = [len(flaky.get(i, ())) for i in range(len(starts))]
    labels = [day.isoformat() for day in starts]
    return Chart(
        key=KEY, title=f"Flaky tests by why they are flaky, per {bucket}", kind="bar",
        index_label=bucket.capitalize(), labels=labels,
        columns=[*columns, Column("flaky tests", totals, drawn=False)], stacked=True,
        description=DESCRIPTION, empty="No test was found flaky in this range.",
        **bucket_days(labels, bucket, period))
