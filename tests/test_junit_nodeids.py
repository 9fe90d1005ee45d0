"""A testcase maps back to its pytest node id (junit/nodeids.py), on real ids: the files
pytest wrote for test files of click, jinja2 and packaging (tests/corpus/junit/), and the
node-id corpus of the three projects (tests/corpus/nodeids/) written as pytest writes
them, by pytest's own ``mangle_test_address``. Other producers get a stable id."""

from __future__ import annotations

from datetime import timedelta

import pytest
from _pytest.junitxml import mangle_test_address
from hypothesis import given
from hypothesis import strategies as st

from board.targets import measure_targets
from junit.ingest import junit_ingest
from junit.models import CaseResult, NodeDay, SignatureDay
from junit.nodeids import escaped, generic_nodeid, pytest_nodeid, pytest_written
from junit.parse import parse_junit
from ledger.measure_targets import measure_target_set
from ledger.models import Node
from ledger.quarantine import quarantine_create
from runs.ingest import report_ingest, signals_ingest
from tests.helpers import body, measurement, record
from tests.junit_files import corpus, corpus_ids, job_counts, junit_xml
from tests.properties import PROPERTY
from tests.test_nodeid_corpus import ALL_IDS

PROJECTS = ("click", "jinja2", "packaging")


def written(nodeid: str) -> tuple[str, str, str]:
    """(classname, name, file) as pytest's junitxml writes a node id."""
    parts = mangle_test_address(nodeid)
    return ".".join(parts[:-1]), parts[-1], nodeid.split("::")[0]


def ids_of(xml: bytes) -> list[str]:
    return [case.nodeid for case in parse_junit(xml, max_cases=100_000).cases]


@pytest.mark.parametrize("project", PROJECTS)
def test_real_pytest_files_map_to_the_ids_pytest_collected(project):
    """xunit2, pytest's default: no file attribute, every id from classname and name."""
    assert ids_of(corpus(f"pytest-{project}.xml")) == corpus_ids(f"pytest-{project}.ids")


@pytest.mark.parametrize("with_file", [True, False], ids=["xunit1", "xunit2"])
def test_the_node_id_corpus_maps_back_exactly(with_file):
    assert len(ALL_IDS) > 900
    for nodeid in ALL_IDS:
        classname, name, file = written(nodeid)
        assert pytest_nodeid(classname, name, file if with_file else "") == nodeid


def test_the_file_attribute_makes_the_id_exact():
    assert pytest_nodeid("tests.test_a.lower", "test_x", "tests/test_a.py") == (
        "tests/test_a.py::lower::test_x")
    assert pytest_nodeid("tests.v1.2.test_a", "test_x", "tests/v1.2/test_a.py") == (
        "tests/v1.2/test_a.py::test_x")
    assert pytest_nodeid("tests.test_a", "test_x", r"tests\test_a.py") == (
        "tests/test_a.py::test_x")  # pytest on Windows
    # An inherited test: the file is the base class's, so the classname decides.
    assert pytest_nodeid("tests.test_b.TestB", "test_x", "tests/base.py") == (
        "tests/test_b.py::TestB::test_x")


# What the classname alone cannot tell, and the suite's known node that settles it.
AMBIGUOUS = [
    ("tests.test_a.lower", "test_x", "tests/test_a.py::lower::test_x"),  # a lower-case class
    ("tests.v1.2.test_a", "test_x", "tests/v1.2/test_a.py::test_x"),  # a dotted directory
    ("docs.index.rst", "index.rst", "docs/index.rst::index.rst"),  # a text doctest
]


@pytest.mark.parametrize(("classname", "name", "known"), AMBIGUOUS)
def test_a_known_node_that_fits_is_preferred(suite, classname, name, known):
    guess = pytest_nodeid(classname, name)
    assert guess != known and pytest_written(known) == (classname, name)
    xml = junit_xml((classname, name, "passed"))
    junit_ingest(suite=suite, body=xml, actor="ci", query={"commit": "c1"})
    assert list(Node.objects.values_list("nodeid", flat=True)) == [guess]

    # A report names the true id: pytest vouches for it, and it wins over the guess.
    report_ingest(suite=suite, body=body([measurement(known)]), actor="ci")
    junit_ingest(suite=suite, body=xml, actor="ci", query={"commit": "c2"})
    newest = CaseResult.objects.order_by("-pk").first()
    assert newest.node.nodeid == known
    # ... and the guess is merged into it: its results are the true node's.
    assert list(Node.objects.values_list("nodeid", flat=True)) == [known]
    assert CaseResult.objects.filter(node__nodeid=known).count() == 2


def test_a_node_quarantined_by_hand_is_vouched_for(suite, today):
    known = "tests/test_a.py::lower::test_x"
    others = [measurement(f"tests/test_{i}.py::test_ok") for i in range(40)]
    report_ingest(suite=suite, body=body(others), actor="ci")  # room under the share cap
    quarantine_create(suite=suite, nodeid=known, owner="@finley", evidence="ci/run-1",
                      expires=today + timedelta(days=5), actor="@finley", today=today)
    junit_ingest(suite=suite, body=junit_xml(("tests.test_a.lower", "test_x", "failed")),
                 actor="ci", query={"commit": "c1"})
    assert CaseResult.objects.get().node.nodeid == known
    assert Node.objects.count() == 41


def test_a_module_that_failed_to_collect_is_its_path():
    assert pytest_nodeid("", "tests.test_broken") == "tests/test_broken.py"
    assert pytest_written("tests/test_broken.py") == ("", "tests.test_broken")


PRODUCERS = [
    ("surefire-TEST-org.acme.FlakyTest.xml",
     ["org.acme.FlakyTest::testFlaky", "org.acme.FlakyTest::testStable"]),
    ("jest-junit.xml",  # classname and name are both "{classname} {title}": the suite leads
     ["checkout::checkout settles within the deadline", "checkout::checkout is skipped for now",
      "sum::sum adds 1 + 2 to equal 3", "sum::sum adds floats exactly"]),
    ("jest-junit-file.xml",
     ["src/sum.test.js::sum::adds 1 + 2 to equal 3", "src/sum.test.js::sum::adds floats exactly",
      "src/retry.test.js::checkout::settles within the deadline",
      "src/retry.test.js::checkout::is skipped for now"]),
]


@pytest.mark.parametrize(("name", "expected"), PRODUCERS, ids=[p[0] for p in PRODUCERS])
def test_other_producers_get_a_stable_id_from_file_classname_and_name(name, expected):
    assert ids_of(corpus(name)) == expected


def test_gotestsum_ids_are_the_package_and_the_test():
    ids = ids_of(corpus("gotestsum-junitxml-report.xml"))
    assert ids[0] == "gotest.tools/gotestsum/testjson/internal/badmain::TestMain"
    assert "gotest.tools/gotestsum/testjson/internal/good::TestNestedSuccess/a/sub" in ids
    assert len(set(ids)) == len(ids)


def test_control_characters_are_escaped_as_pytest_escapes_them():
    assert escaped("a\tb\nc\x1bd\x7f") == "a\\tb\\nc\\x1bd\\x7f"
    assert generic_nodeid("Suite", "line\none") == "Suite::line\\none"
    assert pytest_nodeid("tests.test_a", "test_x[\r]") == "tests/test_a.py::test_x[\\r]"


MODULE = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)
CLASS = st.from_regex(r"Test[A-Za-z0-9_]{0,8}", fullmatch=True)
PARAMS = st.text(st.characters(codec="ascii", exclude_categories=["Cc"]), max_size=12)


@PROPERTY
@given(modules=st.lists(MODULE, min_size=1, max_size=4), classes=st.lists(CLASS, max_size=3),
       function=MODULE, params=st.one_of(st.none(), PARAMS))
def test_pytest_ids_of_the_usual_shape_come_back_from_classname_and_name(
    modules, classes, function, params
):
    nodeid = "::".join(["/".join(modules) + ".py", *classes,
                        function + ("" if params is None else f"[{params}]")])
    classname, name, file = written(nodeid)
    assert pytest_nodeid(classname, name) == nodeid
    assert pytest_nodeid(classname, name, file) == nodeid


NODEIDS = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)


@PROPERTY
@given(st.one_of(NODEIDS, st.lists(NODEIDS, min_size=1, max_size=4).map("::".join)))
def test_pytest_written_is_pytests_own_mangling(nodeid):
    """How a known node is matched to a testcase (rule 2): as pytest itself writes it."""
    assert pytest_written(nodeid) == written(nodeid)[:2]


def test_every_corpus_id_is_written_as_pytest_writes_it():
    assert [pytest_written(n) for n in ALL_IDS] == [written(n)[:2] for n in ALL_IDS]


def _rollups(suite) -> dict[str, list[tuple]]:
    """A suite's JUnit results and rollups, each row without its keys, named by node."""
    def rows(model, *fields):
        return sorted(model.objects.filter(node__suite=suite).values_list("node__nodeid",
                                                                          *fields))
    return {"results": rows(CaseResult, "outcome", "passes", "failures"),
            "jobs": sorted((nodeid, *counts) for slug, commit, job, nodeid, *counts, _
                           in job_counts() if slug == suite.slug),
            "days": rows(NodeDay, "day", "branch", "runs", "failures", "flaky_failures",
                         "flaky_commits"),
            "signatures": rows(SignatureDay, "day", "signature", "failures")}


def test_a_guess_is_merged_into_the_true_node_once_a_gate_upload_names_it(
        suite, other_suite, today):
    """A flaky test under a folder with a dot in its name: its JUnit id is a guess, listed in
    the targets file; once the gate names the true id, the next JUnit file merges the guess
    into it, and what is stored is what it would be had the true id been known from the
    first file (other_suite)."""
    true = "tests/api.v2/test_users.py::test_create"
    classname, name = pytest_written(true)
    guess = pytest_nodeid(classname, name)
    assert guess == "tests/api/v2/test_users.py::test_create"
    steady = [("tests.test_steady", f"test_{i}", "passed") for i in range(4)]

    def flaky_job(into, commit, job="py3.12", xunit1=False):
        xml = junit_xml((classname, name, "failed", "timeout after 2.5s"),
                        (classname, name, "passed"), *steady)
        if xunit1:  # this job's pytest writes each test's file: its id is exact
            xml = xml.replace(f'classname="{classname}"'.encode(),
                              f'file="{true.split("::")[0]}" classname="{classname}"'.encode())
        junit_ingest(suite=into, body=xml, actor="ci",
                     query={"commit": commit, "branch": "main", "job": job})

    def gate_names_it(into):
        signals_ingest(suite=into, body=body([record(true)]), actor="ci")

    gate_names_it(other_suite)
    for into in (suite, other_suite):
        flaky_job(into, "c1")
        flaky_job(into, "c1", job="py3.13", xunit1=True)
    assert {n.nodeid for n in Node.objects.filter(suite=suite, nodeid__contains="users")} == {
        guess, true}  # a guess, and the exact id, each with the day's rows
    measure_target_set(suite=suite, nodeid=guess, actor="@finley", marked=True)
    assert measure_targets(suite, today)[0] == guess
    gate_names_it(suite)
    for into in (suite, other_suite):
        flaky_job(into, "c2")
    assert not Node.objects.filter(suite=suite, nodeid=guess).exists()
    merged = _rollups(suite)
    assert merged == _rollups(other_suite)
    assert [row for row in merged["results"] if row[0] == true] == [(true, "passed", 1, 1)] * 3
    assert {row[-1] for row in merged["days"] if row[0] == true} == {2}  # flaky on c1 and c2
    assert measure_targets(suite, today) == [true]
