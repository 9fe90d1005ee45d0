"""The test set from CI's own runs (issue 34; docs/test-set.md): when a report does not
size it, the quarantined share counts the tests of CI's most recent complete run on the
suite's default branch, from its JUnit files. JUnit from another branch cannot pad it, a
deleted test drops out at the next run, and every path (the report, the new-entry refusal,
the import's warning, the status endpoint, the pages) reads the one figure."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from junit.ingest import junit_ingest
from ledger.ledger_file import import_ledger
from ledger.models import AuditEvent, CiRun
from ledger.quarantine import quarantine_create
from ledger.selectors import share_figures
from ledger.settings_services import default_branch_set
from ledger.test_set import MEMBERS_KEPT
from runs.ingest import report_ingest
from runs.trend_counts import share_over_time
from tests.api_http import new_token
from tests.helpers import body, field_errors, measurement
from tests.junit_files import junit_xml

# Two projects' suites in one board suite, as CI runs them in two jobs: 375 tests.
PROJECTS = {"itsdangerous": 214, "markupsafe": 161}
FLAKY = ["tests/test_itsdangerous/test_timed.py::test_expired_0",
         "tests/test_itsdangerous/test_timed.py::test_expired_1",
         "tests/test_markupsafe/test_escape.py::test_escape_0",
         "tests/test_markupsafe/test_escape.py::test_escape_1"]


def project_cases(project: str, count: int, *, failing: frozenset = frozenset()) -> list:
    """``count`` testcases of a project, as pytest writes them: two classnames, the first
    two tests of each flaky in the sense that ``failing`` names which failed this time."""
    module = {"itsdangerous": "test_timed", "markupsafe": "test_escape"}[project]
    stem = {"itsdangerous": "test_expired", "markupsafe": "test_escape"}[project]
    cases = []
    for i in range(count):
        nodeid = f"tests/test_{project}/{module}.py::{stem}_{i}"
        outcome = "failed" if nodeid in failing else "passed"
        cases.append((f"tests.test_{project}.{module}", f"{stem}_{i}", outcome))
    return cases


def ci_upload(suite, cases, *, commit, job, branch="main", at=None):
    query = {"commit": commit, "job": job, "branch": branch}
    return junit_ingest(suite=suite, body=junit_xml(*cases), actor="ci", query=query,
                        now=at).file


def ci_run(suite, commit, *, sizes=PROJECTS, failing=frozenset(), branch="main", at=None):
    """Every job of one commit's CI run uploads its JUnit."""
    for project, count in sizes.items():
        ci_upload(suite, project_cases(project, count, failing=failing), commit=commit,
                  job=project, branch=branch, at=at)


def entry(suite, today, nodeid, evidence="ci/run-1"):
    return quarantine_create(suite=suite, nodeid=nodeid, owner="@finley", evidence=evidence,
                             actor="@finley", expires=today + timedelta(days=14), today=today)


def test_the_adoption_loop_fits_under_the_cap(suite, today):
    """JUnit from both projects, the four flaky ones measured, one quarantined: the share
    is 1 of 375 (about 0.3%), and every later report passes the cap."""
    ci_run(suite, "c1", failing=frozenset(FLAKY[::2]))
    ci_run(suite, "c2", failing=frozenset(FLAKY[1::2]))
    measured = body([measurement(nodeid, n=200, fails=6) for nodeid in FLAKY])
    first = report_ingest(suite=suite, body=measured, actor="ci").upload
    assert (first.test_set_size, first.size_source, first.size_commit) == (375, "ci_run", "c2")
    entry(suite, today, FLAKY[0])
    later = report_ingest(suite=suite, body=measured, actor="ci", query={"commit": "c3"})
    report = later.upload
    assert (report.quarantined, report.test_set_size, report.over_cap) == (1, 375, False)
    assert report.reason != "quarantine_cap_exceeded"
    assert round(report.share, 4) == round(1 / 375, 4) and report.share < 0.003
    figures = share_figures(suite, today)
    assert (figures.size_words, figures.over_cap) == ("375 tests CI ran on main", False)


def test_without_junit_the_known_nodes_still_size_it(suite, today):
    """The bar that held before: four measured nodes and one quarantined is 1 of 4."""
    report_ingest(suite=suite, body=body([measurement(n) for n in FLAKY]), actor="ci")
    figures = share_figures(suite, today)
    assert (figures.quarantined, figures.size, figures.source) == (0, 4, "known_nodes")
    with pytest.raises(ValidationError) as refused:
        entry(suite, today, FLAKY[0])
    assert "would put 1 of 4 known nodes in quarantine (25.0%)" in str(refused.value)


@pytest.mark.slow
def test_a_padded_file_from_another_branch_does_not_move_the_share(suite, today):
    ci_run(suite, "c1")
    entry(suite, today, FLAKY[0])
    before = share_figures(suite, today)
    padding = [("tests.test_pad", f"test_fake_{i}", "passed") for i in range(10_000)]
    for branch in ("feature/pad", "", "Main", "main2"):
        ci_upload(suite, padding, commit=f"pad-{branch}", job="pad", branch=branch)
        assert share_figures(suite, today) == before
    assert before.size == 375
    assert not CiRun.objects.exclude(branch="main").exists()


def test_a_run_with_tests_deleted_shrinks_it_at_the_next_commit(suite, today):
    ci_run(suite, "c1")
    assert share_figures(suite, today).size == 375
    ci_run(suite, "c2", sizes={"itsdangerous": 200, "markupsafe": 161})
    figures = share_figures(suite, today)
    assert (figures.size, figures.run.commit) == (361, "c2")


def test_a_run_counts_once_every_job_of_the_one_before_has_uploaded(suite, today):
    ci_run(suite, "c1")
    ci_upload(suite, project_cases("markupsafe", 150), commit="c2", job="markupsafe")
    assert (share_figures(suite, today).run.commit, share_figures(suite, today).size) == (
        "c1", 375)
    ci_upload(suite, project_cases("itsdangerous", 214), commit="c2", job="itsdangerous")
    assert (share_figures(suite, today).run.commit, share_figures(suite, today).size) == (
        "c2", 364)


def test_a_commits_jobs_are_united_and_a_rerun_adds_no_test_twice(suite, today):
    """Two jobs running the same tests (a matrix) count them once; a sharded job's files
    add up; a job's second attempt adds nothing it named before."""
    cases = project_cases("markupsafe", 161)
    ci_upload(suite, cases, commit="c1", job="py312")
    ci_upload(suite, cases, commit="c1", job="py313")
    ci_upload(suite, cases[:100], commit="c1", job="py313")
    ci_upload(suite, project_cases("itsdangerous", 214)[:10], commit="c1", job="shard-2")
    run = CiRun.objects.get()
    assert (run.tests, run.files, run.jobs) == (171, 4, ["py312", "py313", "shard-2"])


def test_an_infrastructure_failure_does_not_size_it(suite, today):
    ci_run(suite, "c1")
    broken = [("tests.test_x", f"test_{i}", "error") for i in range(20)]
    for job in PROJECTS:
        file = ci_upload(suite, broken, commit="c2", job=job)
        assert file.infrastructure
    figures = share_figures(suite, today)
    assert (figures.size, figures.run.commit) == (375, "c1")


def test_an_old_run_gives_way_to_the_known_nodes(suite, today):
    long_ago = datetime.combine(today - timedelta(days=31), datetime.min.time(), tzinfo=UTC)
    ci_run(suite, "c1", at=long_ago)
    report_ingest(suite=suite, body=body([measurement(n) for n in FLAKY]), actor="ci")
    figures = share_figures(suite, today)
    assert (figures.size, figures.source) == (4, "known_nodes")
    yesterday = long_ago + timedelta(days=30)
    ci_run(suite, "c2", at=yesterday)
    assert share_figures(suite, today).source == "ci_run"


def test_the_default_branch_is_a_setting_with_its_history(suite, today):
    ci_run(suite, "c1")
    ci_run(suite, "d1", sizes={"markupsafe": 161}, branch="develop")
    assert share_figures(suite, today).size == 375
    default_branch_set(suite=suite, actor="@lea", branch="develop")
    suite.refresh_from_db()
    # The develop run came before the switch, and was not kept: the known nodes decide
    # until develop's next run.
    assert share_figures(suite, today).source == "known_nodes"
    ci_run(suite, "d2", sizes={"markupsafe": 161}, branch="develop")
    assert share_figures(suite, today).size == 161
    event = AuditEvent.objects.filter(action=AuditEvent.Action.SETTINGS).latest("pk")
    assert (event.before, event.after) == ({"default_branch": "main"},
                                           {"default_branch": "develop"})
    with pytest.raises(ValidationError) as refused:
        default_branch_set(suite=suite, actor="@lea", branch="bad..name")
    assert "default_branch" in refused.value.error_dict


def test_the_new_entry_refusal_reads_the_same_figure(suite, today):
    """5% of 375 is 18 entries; the 19th is refused, as a report would fail it."""
    ci_run(suite, "c1")
    for i in range(18):
        entry(suite, today, f"tests/test_markupsafe/test_escape.py::test_escape_{i}")
    with pytest.raises(ValidationError) as refused:
        entry(suite, today, "tests/test_markupsafe/test_escape.py::test_escape_18")
    codes = [e.code for errors in refused.value.error_dict.values() for e in errors]
    assert codes == ["cap_exceeded"]


def test_the_imports_warning_says_what_the_test_set_counted(suite, today):
    ci_upload(suite, project_cases("markupsafe", 10), commit="c1", job="markupsafe")
    rows = [(nodeid, {"owner": "@finley", "expires": (today + timedelta(days=9)).isoformat(),
                      "evidence": "ci/run-9", "n": 200, "fails": 9})
            for nodeid in (f"tests/test_markupsafe/test_escape.py::test_escape_{i}"
                           for i in range(2))]
    outcome = import_ledger(suite=suite, pairs=rows, actor="@lea", today=today)
    assert any("2 of 10 tests CI ran on main" in w for w in outcome.warnings), outcome.warnings


def test_a_late_file_of_an_old_run_only_raises_its_count(suite, today):
    """Past the newest MEMBERS_KEPT runs a run keeps its count, not its tests: a late file
    can raise the count to its own tests, never lower it."""
    for i in range(MEMBERS_KEPT + 1):
        ci_upload(suite, project_cases("markupsafe", 100), commit=f"c{i}", job="markupsafe")
    oldest = CiRun.objects.get(commit="c0")
    assert oldest.members is None
    assert CiRun.objects.filter(members__isnull=False).count() == MEMBERS_KEPT
    ci_upload(suite, project_cases("markupsafe", 120), commit="c0", job="other")
    ci_upload(suite, project_cases("markupsafe", 50), commit="c0", job="third")
    oldest.refresh_from_db()
    assert (oldest.tests, oldest.files) == (120, 3)


def test_the_status_endpoint_and_the_report_answer_say_where_it_came_from(suite, today):
    ci_run(suite, "c1")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {new_token(suite, 'read')}")
    share = client.get(f"/api/v1/suites/{suite.slug}/status").json()["share"]
    assert (share["test_set_size"], share["size_source"]) == (375, "ci_run")
    assert share["ci_run"] == {"commit": "c1", "branch": "main",
                               "jobs": ["itsdangerous", "markupsafe"], "tests": 375,
                               "day": today.isoformat()}
    writer = Client(HTTP_AUTHORIZATION=f"Bearer {new_token(suite, 'write')}")
    answer = writer.post(f"/api/v1/suites/{suite.slug}/reports?commit=c2",
                         body([measurement(FLAKY[0])]), content_type="application/json")
    assert answer.status_code == 201, answer.content
    said = answer.json()["share"]
    assert (said["size_source"], said["size_commit"], said["test_set_size"]) == (
        "ci_run", "c1", 375)


def test_the_pages_show_the_figure_and_its_source(client_for, lead, suite, today):
    ci_run(suite, "c1")
    report = report_ingest(suite=suite, body=body([measurement(FLAKY[0])]), actor="ci").upload
    client = client_for(lead)
    settings_page = client.get(reverse("settings", args=[suite.slug])).content.decode()
    assert "375 tests CI ran on main" in settings_page
    assert "2 jobs (itsdangerous, markupsafe)" in settings_page
    assert 'value="main"' in settings_page
    page = client.get(reverse("report", args=[suite.slug, report.pk])).content.decode()
    assert "375 tests in CI's run of <code>c1</code> on the default branch" in page
    assert "0 of 375 tests CI ran;" in page
    overview = client.get(reverse("overview", args=[suite.slug])).content.decode()
    assert "0 of 375 tests CI ran on main" in overview


def test_the_settings_form_refuses_a_bad_branch_and_keeps_the_old(client_for, lead, suite):
    client = client_for(lead)
    url = reverse("settings_test_set", args=[suite.slug])
    refused = client.post(url, {"default_branch": "no spaces please"})
    assert refused.status_code == 200
    assert "no spaces" in field_errors(refused, "default_branch")
    suite.refresh_from_db()
    assert suite.default_branch == "main"
    saved = client.post(url, {"default_branch": "trunk"}, follow=True)
    assert "CI&#x27;s runs on trunk now size the test set." in saved.content.decode()
    suite.refresh_from_db()
    assert suite.default_branch == "trunk"


def test_the_share_over_time_reads_the_run_of_each_day(suite, today):
    """The leads' share chart sizes each day as the board did that day, and its last day is
    the ledger's own figure."""
    def at(days_ago: int) -> datetime:
        return datetime.combine(today - timedelta(days=days_ago), datetime.min.time(),
                                tzinfo=UTC) + timedelta(hours=10)

    ci_run(suite, "c1", at=at(3))
    ci_run(suite, "c2", sizes={"itsdangerous": 200, "markupsafe": 161}, at=at(1))
    ci_upload(suite, project_cases("markupsafe", 100), commit="c3", job="markupsafe")
    days = share_over_time(suite, start=today - timedelta(days=5), end=today)
    assert [day.size for day in days] == [0, 0, 375, 375, 361, 361]
    assert days[-1].size == share_figures(suite, today).size


def test_the_junit_answer_says_whether_the_file_sizes_the_test_set(suite):
    client = Client(HTTP_AUTHORIZATION=f"Bearer {new_token(suite, 'write')}")

    def sent(**query):
        url = f"/api/v1/suites/{suite.slug}/junit"
        answer = client.post(url + "?" + "&".join(f"{k}={v}" for k, v in query.items()),
                             junit_xml(*project_cases("markupsafe", 3)),
                             content_type="application/xml")
        assert answer.status_code == 201, answer.content
        return answer.json()

    on_main = sent(commit="c1", branch="main", job="a")
    assert on_main["sizes_test_set"] is True
    assert "Its tests count in the test set: CI's run of c1 on main." in on_main["summary"]
    unnamed = sent(commit="c2", job="a")
    assert unnamed["sizes_test_set"] is False
    assert "names no branch, so it does not size the test set" in unnamed["summary"]
    feature = sent(commit="c3", branch="feature", job="a")
    assert feature["sizes_test_set"] is False and "test set" not in feature["summary"]
