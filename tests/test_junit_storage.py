"""How the JUnit rows are stored. The raw rows (``CaseResult``, ``JobOutcome``) have no
foreign key in the database, whose check at the commit cost an upload more than writing
them: deleting their suite, node, file or job run still deletes them (Django's
``CASCADE``), and the prune leaves none without its suite, node, file or run. A job count
holds integers only: the commit and the job are its run's (``JobRun``). On PostgreSQL the
summary, whose rows every upload updates, keeps room on its pages for the updates."""

from __future__ import annotations

import pytest
from django.db import connection

from junit.models import CaseResult, JobOutcome, JobRun, JUnitFile, NodeSummary
from junit.prune import prune_junit
from ledger.models import Node
from tests.test_junit_prune import upload

pytestmark = pytest.mark.django_db
RAW_KEYS = {CaseResult: ("suite", "node", "file"), JobOutcome: ("run", "node")}


def orphans() -> dict[str, int]:
    """Raw rows whose suite, node or file is gone, counted by model and key."""
    found = {}
    for model, keys in RAW_KEYS.items():
        for key in keys:
            parents = model._meta.get_field(key).related_model.objects.values("pk")
            count = model.objects.exclude(**{f"{key}_id__in": parents}).count()
            if count:
                found[f"{model.__name__}.{key}"] = count
    return found


def raw_rows(suite) -> tuple[int, int]:
    return (CaseResult.objects.filter(suite_id=suite.pk).count(),
            JobOutcome.objects.filter(run__suite_id=suite.pk).count())


@pytest.fixture
def stored(suite, other_suite) -> list[JUnitFile]:
    """Two files of the suite (today, and 40 days ago) and one of the other suite."""
    files = [upload(suite, 0, "c0"), upload(suite, 40, "c40"), upload(other_suite, 0, "c0")]
    assert raw_rows(suite) == (4, 4) and raw_rows(other_suite) == (2, 2)
    return files


def test_the_raw_rows_have_no_foreign_key_in_the_database():
    with connection.cursor() as cursor:
        keys = {model._meta.db_table: sorted(
            name for name, constraint in connection.introspection.get_constraints(
                cursor, model._meta.db_table).items() if constraint["foreign_key"])
            for model in RAW_KEYS}
    assert keys == {"junit_caseresult": [], "junit_joboutcome": []}


def test_deleting_a_suite_deletes_its_raw_rows(suite, other_suite, stored):
    assert JobOutcome.objects.filter(run__suite=suite).count() == 4
    suite.delete()
    assert raw_rows(suite) == (0, 0) and raw_rows(other_suite) == (2, 2)
    assert orphans() == {}


def test_deleting_a_suite_deletes_its_job_runs_and_their_counts(suite, other_suite, stored):
    assert JobRun.objects.filter(suite=suite).count() == 2
    suite.delete()
    assert not JobRun.objects.filter(suite_id=suite.pk).exists()
    assert list(JobRun.objects.values_list("suite_id", "commit")) == [(other_suite.pk, "c0")]
    assert JobOutcome.objects.count() == 2
    assert not JobOutcome.objects.exclude(run__in=JobRun.objects.all()).exists()


def test_a_job_count_holds_no_commit_or_job_and_is_unique_by_run_and_node():
    table = JobOutcome._meta.db_table
    with connection.cursor() as cursor:
        columns = {column.name for column in connection.introspection.get_table_description(
            cursor, table)}
        constraints = connection.introspection.get_constraints(cursor, table)
    assert columns == {"id", "run_id", "node_id", "passes", "failures", "flaky", "last_day"}
    # Beside the primary key and the counts' checks, the unique key alone: no index of
    # days, none of the run or the node alone.
    keys = {name: (c["columns"], c["unique"]) for name, c in constraints.items()
            if not c["primary_key"] and not c["check"]}
    assert keys == {"one_job_outcome_per_run_node": (["run_id", "node_id"], True)}


def test_deleting_a_node_deletes_its_raw_rows(suite, other_suite, stored):
    bad = Node.objects.filter(suite=suite, nodeid="tests/test_a.py::test_bad")
    assert bad.count() == 1
    bad.delete()
    assert raw_rows(suite) == (2, 2) and raw_rows(other_suite) == (2, 2)
    assert orphans() == {}


def test_deleting_a_file_deletes_its_results(suite, stored):
    stored[0].delete()
    assert raw_rows(suite) == (2, 4)  # the job counts are the prune's to delete
    assert orphans() == {}


def test_the_prune_leaves_no_raw_row_without_its_suite_node_or_file(suite, other_suite,
                                                                  stored, today):
    pruned = prune_junit(days=30, today=today)
    assert (pruned.results, pruned.job_outcomes) == (2, 2)
    assert raw_rows(suite) == (2, 2) and raw_rows(other_suite) == (2, 2)
    assert orphans() == {}


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's fillfactor")
def test_the_summary_keeps_room_on_its_pages_for_its_updates():
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = %s",
                       [NodeSummary._meta.db_table])
        assert cursor.fetchone()[0] == ["fillfactor=70"]
