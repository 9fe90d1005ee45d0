"""``manage.py prune`` over a board with more than a year of history (tests/year.py), on
the configured database: the uploads older than the 400 days kept go with their rows, the
uploads entries cite stay, the rollups, entries and audit events are untouched, the
trends (the selectors and the API's bytes) answer the same, and pruning again, or a dry
run, deletes nothing."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.db.models import Sum
from django.test import Client
from django.utils import timezone

from ledger.models import AuditEvent, QuarantineEntry
from runs.models import Measurement, NodeVerdict, ReasonRollup, Report, VerdictBatch
from tests.api_http import new_token
from tests.test_prune import prune_command, trends_answer
from tests.world import make_suite
from tests.year import DAYS, PER_DAY, ROWS, Year, year_of_history

KEPT = 400  # RETENTION_DAYS' default
OLD = (DAYS - KEPT) * PER_DAY  # uploads of each kind dated before the days kept
SPAN = 365  # days a trends answer spans at most, less one: the oldest year, and the last


def build_world() -> SimpleNamespace:
    """This module's shared world (tests/world.py): a suite with a year of history, and
    nothing else, built once for a run of the tests that ask for it."""
    suite, today = make_suite("suite"), timezone.now().date()
    return SimpleNamespace(suite=suite, today=today, year=year_of_history(suite, today))


@pytest.fixture
def year(world) -> Year:
    return world.year


def whole(suite) -> tuple:
    """Everything a prune must leave as it was."""
    return (list(ReasonRollup.objects.order_by("pk").values()),
            list(QuarantineEntry.objects.order_by("pk").values()),
            list(AuditEvent.objects.order_by("pk").values()))


def trends_served(suite, today, token) -> list[bytes]:
    client = Client()
    answers = [client.get(f"/api/v1/suites/{suite.slug}/trends",
                          {"from": end - timedelta(days=SPAN), "to": end, "bucket": bucket,
                           "source": source},
                          headers={"Authorization": f"Bearer {token}"})
               for end in (today - timedelta(days=DAYS - SPAN), today)
               for bucket in ("day", "week") for source in ("reports", "verdicts")]
    assert {answer.status_code for answer in answers} == {200}
    return [answer.content for answer in answers]


def uploads_by_age(model, today) -> tuple[set[int], set[int]]:
    """The pks of ``model``'s uploads (old, kept) as the retention splits them."""
    cutoff = today - timedelta(days=KEPT - 1)
    old = set(model.objects.filter(day__lt=cutoff).values_list("pk", flat=True))
    return old, set(model.objects.filter(day__gte=cutoff).values_list("pk", flat=True))


def test_the_history_spans_more_than_the_days_kept(suite, today, year):
    old_reports, young_reports = uploads_by_age(Report, today)
    old_batches, _ = uploads_by_age(VerdictBatch, today)
    assert len(old_reports) == len(old_batches) == OLD
    assert len(young_reports) == KEPT * PER_DAY
    assert year.cited_reports <= old_reports and year.cited_batches <= old_batches
    assert ReasonRollup.objects.filter(day__lt=today - timedelta(days=KEPT)).exists()
    assert Measurement.objects.count() == NodeVerdict.objects.count() == DAYS * PER_DAY * ROWS


def test_a_prune_deletes_the_old_uploads_and_keeps_the_rest_whole(suite, today, year):
    old_reports, young_reports = uploads_by_age(Report, today)
    old_batches, young_batches = uploads_by_age(VerdictBatch, today)
    token = new_token(suite, "read")
    before, trends = whole(suite), trends_answer(suite, today)
    served = trends_served(suite, today, token)
    gone_reports = len(old_reports) - len(year.cited_reports)
    gone_batches = len(old_batches) - len(year.cited_batches)

    assert prune_command() == (
        f"Deleted {gone_reports} reports ({gone_reports * ROWS} measurements) and "
        f"{gone_batches} verdict batches ({gone_batches * ROWS} verdicts) older than 400 "
        f"days; kept 3 older uploads that entries cite.\n")

    assert set(Report.objects.values_list("pk", flat=True)) == young_reports | year.cited_reports
    assert set(VerdictBatch.objects.values_list("pk", flat=True)) == (
        young_batches | year.cited_batches)
    for model, rows, upload, count in ((Measurement, "measurements", Report, "measurement"),
                                       (NodeVerdict, "verdicts", VerdictBatch, "record")):
        held = upload.objects.aggregate(n=Sum(f"{count}_count"))["n"]
        assert model.objects.count() == held, rows  # no row outlives its upload
    assert whole(suite) == before
    assert trends_answer(suite, today) == trends
    assert trends_served(suite, today, token) == served


def test_a_second_prune_deletes_nothing(suite, today, year):
    prune_command()
    after = (set(Report.objects.values_list("pk", flat=True)), Measurement.objects.count(),
             set(VerdictBatch.objects.values_list("pk", flat=True)), NodeVerdict.objects.count())
    assert prune_command() == (
        "Deleted 0 reports (0 measurements) and 0 verdict batches (0 verdicts) older than "
        "400 days; kept 3 older uploads that entries cite.\n")
    assert (set(Report.objects.values_list("pk", flat=True)), Measurement.objects.count(),
            set(VerdictBatch.objects.values_list("pk", flat=True)),
            NodeVerdict.objects.count()) == after


def test_a_dry_run_counts_what_a_prune_deletes_and_deletes_nothing(suite, today, year):
    counts = (Report.objects.count(), Measurement.objects.count(),
              VerdictBatch.objects.count(), NodeVerdict.objects.count())
    before = whole(suite)
    said = prune_command("--dry-run")
    assert (Report.objects.count(), Measurement.objects.count(),
            VerdictBatch.objects.count(), NodeVerdict.objects.count()) == counts
    assert whole(suite) == before
    assert said.replace("Would delete", "Deleted") == prune_command()
