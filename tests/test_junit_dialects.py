"""Every producer's JUnit dialect, read from files the tool itself wrote
(tests/corpus/junit/, see its README): the counts pytest would print, each test's
attempts, and reruns counted as both a failure and a pass."""

from __future__ import annotations

import re

import pytest

from junit.ingest import junit_ingest
from junit.models import CaseResult
from junit.parse import parse_junit
from tests.junit_files import corpus, job_counts

RESULT_FIELDS = ("outcome", "attempts", "passes", "failures", "message", "signature")


def ingest(suite, name_or_body, **query):
    xml = corpus(name_or_body) if isinstance(name_or_body, str) else name_or_body
    return junit_ingest(suite=suite, body=xml, actor="ci",
                        query={"commit": "c0ffee", **query}).file


def results(file) -> dict[str, tuple]:
    return {nodeid: tuple(rest) for nodeid, *rest in CaseResult.objects.filter(file=file)
            .order_by("position").values_list("node__nodeid", *RESULT_FIELDS)}


def counts(file) -> tuple:
    return (file.producer, file.testcases, file.passed, file.failed, file.error, file.skipped,
            file.reruns, file.flaky_in_file)


PAYMENTS = "tests/test_payments.py::"
# pytest-rerunfailures 16.7, --reruns 2: "1 failed, 7 passed, 1 skipped, 1 error, 7 rerun".
RERUN_RESULTS = {
    PAYMENTS + "test_refund_rounds_half_even": ("passed", 1, 1, 0, "", ""),
    PAYMENTS + "test_settles_within_deadline": ("passed", 2, 1, 1, "", ""),
    PAYMENTS + "test_ledger_total_always_wrong": (
        "failed", 3, 0, 3, "assert 6 == 7", "assert <n> == <n>"),
    PAYMENTS + "test_reads_the_database": (
        "error", 3, 0, 3,
        'failed on setup with "ConnectionError: could not connect to 10.0.3.17:5432 after 3 '
        'tries"',
        'failed on setup with "ConnectionError: could not connect to <n>:<n> after <n> tries"'),
    PAYMENTS + "test_gateway_roundtrip": ("skipped", 1, 0, 0, "", ""),
    PAYMENTS + "TestCurrency::test_format[EUR]": ("passed", 1, 1, 0, "", ""),
    PAYMENTS + "TestCurrency::test_format[JPY]": ("passed", 3, 1, 2, "", ""),
    PAYMENTS + "TestCurrency::test_format[a b/c::d]": ("passed", 1, 1, 0, "", ""),
    "tests/unit/test_cache.py::TestLru::TestEviction::test_oldest_goes_first": (
        "passed", 1, 1, 0, "", ""),
    "tests/unit/test_cache.py::TestLru::test_hit": ("passed", 1, 1, 0, "", ""),
}
FLAKY_PAYMENTS = [PAYMENTS + "test_settles_within_deadline",
                  PAYMENTS + "TestCurrency::test_format[JPY]"]


@pytest.mark.parametrize("family", ["xunit1", "xunit2"])
def test_pytest_rerunfailures_reruns_count_as_failures_and_a_pass(suite, family):
    name = f"pytest-rerunfailures-{family}.xml"
    xml = corpus(name)
    # The file itself counts tests by their last attempt: the flaky ones are not failures.
    assert b'errors="1" failures="1" skipped="1" tests="10"' in xml
    file = ingest(suite, name)
    assert counts(file) == ("pytest", 10, 7, 1, 1, 1, 7, 2)
    assert results(file) == RERUN_RESULTS
    assert file.newly_flaky == FLAKY_PAYMENTS
    assert not file.infrastructure


def test_reruns_that_all_passed_in_the_end_are_flaky_in_a_file_saying_no_failures(suite):
    """``3 passed, 3 rerun``: the file says failures="0", and no element says a failure."""
    xml = corpus("pytest-rerunfailures-passed-on-rerun.xml")
    assert b'errors="0" failures="0"' in xml and b"<failure" not in xml
    file = ingest(suite, "pytest-rerunfailures-passed-on-rerun.xml")
    assert counts(file) == ("pytest", 3, 3, 0, 0, 0, 3, 2)
    assert file.newly_flaky == FLAKY_PAYMENTS
    flaky = [(passes, failures) for *_, passes, failures, flaky, _ in job_counts() if flaky]
    assert flaky == [(1, 2), (1, 1)]


@pytest.mark.parametrize("project", ["click", "jinja2", "packaging"])
def test_real_pytest_files_of_three_projects(suite, project):
    xml = corpus(f"pytest-{project}.xml")
    tests = int(re.search(rb'tests="(\d+)"', xml)[1])
    file = ingest(suite, f"pytest-{project}.xml")
    assert counts(file) == ("pytest", tests, tests, 0, 0, 0, 0, 0)
    assert CaseResult.objects.filter(file=file).count() == tests


def test_surefire_flaky_elements_are_earlier_failed_attempts(suite):
    xml = corpus("surefire-TEST-org.acme.FlakyTest.xml")
    failed = xml.count(b"<flakyFailure ") + xml.count(b"<flakyError ")
    assert failed >= 3 and b'failures="0"' in xml
    file = ingest(suite, "surefire-TEST-org.acme.FlakyTest.xml")
    assert counts(file) == ("surefire", 2, 2, 0, 0, 0, failed, 1)
    assert results(file) == {
        "org.acme.FlakyTest::testFlaky": ("passed", failed + 1, 1, failed,
                                          "expected: <1> but was: <0>",
                                          "expected: <<n>> but was: <<n>>"),
        "org.acme.FlakyTest::testStable": ("passed", 1, 1, 0, "", ""),
    }
    assert file.newly_flaky == ["org.acme.FlakyTest::testFlaky"]


def test_surefire_rerun_failures_are_later_failed_attempts(suite):
    file = ingest(suite, "surefire-rerunFailure-docs.xml")
    assert counts(file) == ("surefire", 1, 0, 1, 0, 0, 1, 0)
    assert results(file) == {"..::..": ("failed", 2, 0, 2, "first failure stack trace",
                                        "first failure stack trace")}
    assert file.newly_flaky == []


@pytest.mark.parametrize("name", ["jest-junit.xml", "jest-junit-file.xml"])
def test_jest_junit(suite, name):
    file = ingest(suite, name)
    assert counts(file) == ("jest", 4, 2, 1, 0, 1, 0, 0)
    failing = [r for r in results(file).values() if r[0] == "failed"]
    assert failing == [("failed", 1, 0, 1,
                        "Error: expect(received).toBe(expected) // Object.is equality",
                        "Error: expect(received).toBe(expected) // Object.is equality")]


def test_gotestsum_with_a_package_that_failed_outside_its_tests(suite):
    """gotestsum's own golden file: badmain's TestMain failure is the test binary failing
    outside any test, so the file is an infrastructure failure, kept out of detection."""
    xml = corpus("gotestsum-junitxml-report.xml")
    file = ingest(suite, "gotestsum-junitxml-report.xml")
    assert (file.producer, file.testcases) == ("gotestsum", xml.count(b"<testcase "))
    assert file.failed == xml.count(b"<failure ") and file.skipped == xml.count(b"<skipped ")
    assert file.infrastructure_reason == "error_outside_tests"
    assert results(file)["gotest.tools/gotestsum/testjson/internal/withfails::TestFailed"] == (
        "failed", 1, 0, 1, "fails_test.go:34: this failed", "fails_test.go:<n>: this failed")
    assert job_counts() == [] and CaseResult.objects.filter(file=file).exists()


def test_gotestsum_rerun_fails_writes_the_test_failed_then_passed(suite):
    """``gotestsum --rerun-fails`` keeps a package's failed and passed runs; its report
    (internal/junitxml/report.go) writes the failed testcases, then the passed ones. Made
    of the golden file's own TestFailed testcase, as report.go writes it."""
    golden = corpus("gotestsum-junitxml-report.xml").decode()
    failed = re.search(r'\t\t<testcase classname="[^"]*withfails" name="TestFailed".*?'
                       r"</testcase>\n", golden, re.S)[0]
    passed = re.sub(r"<failure.*?</failure>", "", failed, flags=re.S)
    suite_xml = re.search(r'\t<testsuite [^>]*withfails".*?</properties>\n', golden, re.S)[0]
    xml = f"<testsuites>\n{suite_xml}{failed}{passed}\t</testsuite>\n</testsuites>\n"
    file = ingest(suite, xml.encode())
    assert counts(file) == ("gotestsum", 1, 1, 0, 0, 0, 1, 1)
    assert file.newly_flaky == ["gotest.tools/gotestsum/testjson/internal/withfails::TestFailed"]


def test_a_bare_testsuite_nested_suites_and_namespaces(suite):
    xml = b"""<?xml version="1.0"?>
    <testsuite xmlns="urn:example" name="outer">
      <testsuite name="inner">
        <testcase name="keeps" classname="pkg.Inner"/>
        <testcase name="no_class"><failure message="x"/></testcase>
      </testsuite>
      <testcase name="top" classname="pkg.Outer"><skipped/></testcase>
    </testsuite>"""
    parsed = parse_junit(xml, max_cases=10)
    assert [case.nodeid for case in parsed.cases] == [
        "pkg.Inner::keeps", "inner::no_class", "pkg.Outer::top"]
    file = ingest(suite, xml)
    assert counts(file) == ("junit", 3, 1, 1, 0, 1, 0, 0)


def test_a_failure_outranks_an_error_in_one_testcase(suite):
    """pytest writes a test that failed, then errored in teardown, as one testcase."""
    xml = (b'<testsuites name="pytest tests"><testsuite name="pytest">'
           b'<testcase classname="tests.test_a" name="test_x"><failure message="bad"/>'
           b'<error message="failed on teardown"/></testcase></testsuite></testsuites>')
    assert results(ingest(suite, xml))["tests/test_a.py::test_x"][:2] == ("failed", 1)
