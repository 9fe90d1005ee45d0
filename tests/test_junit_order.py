"""POST /api/v1/suites/{suite}/junit/order: the order CI ran a commit's tests in, from the
JUnit files the board holds for it, for measure's check of a test where CI ran it. (Who may
call it: tests/test_access_api.py's table; its answers are checked against the OpenAPI
document by tests/api_http.py.)"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from junit.ingest import junit_ingest
from junit.models import JUnitFile
from tests.api_http import API, new_token
from tests.helpers import body
from tests.junit_files import junit_xml

A, B, C, D = (f"tests/test_a.py::test_{name}" for name in "abcd")
E = "tests/test_e.py::test_e"


def case(node: str, outcome: str) -> tuple:
    path, _, name = node.partition("::")
    return (path.removesuffix(".py").replace("/", "."), name, outcome)


@pytest.fixture
def upload(suite):
    made = []

    def junit(*cases, commit="c1", job="py312", attempt=1):
        # Each upload a second after the one before: "the newest" is the last made.
        now = timezone.now() + timedelta(seconds=len(made))
        made.append(junit_ingest(suite=suite, body=junit_xml(*cases), actor="ci", now=now,
                                 query={"commit": commit, "job": job, "attempt": attempt,
                                        "branch": "main"}).file)
        return made[-1]

    return junit


@pytest.fixture
def ask(board, suite):
    read = new_token(suite, "read")

    def order(nodes, commit="c1", raw=None):
        return board.post(f"{API}/suites/{suite.slug}/junit/order",
                          raw if raw is not None else body(nodes), token=read,
                          query={"commit": commit} if commit is not None else None)

    return order


def test_a_test_gets_the_tests_ci_ran_before_it_and_its_outcome(ask, upload):
    junit = upload(case(C, "passed"), case(A, "failed"), case(B, "passed"), case(D, "passed"))
    answer = ask([B])
    assert answer.status == 200, answer.raw
    assert answer.json == {"suite": "acme", "commit": "c1", "files": [
        {"id": junit.pk, "job": "py312", "attempt": 1,
         "uploaded_at": answer.json["files"][0]["uploaded_at"], "order": [C, A, B]},
    ], "nodes": [{"node": B, "file": junit.pk, "position": 2, "outcome": "passed"}]}


def test_a_file_where_it_passed_wins_then_the_newest(ask, upload):
    passed_old = upload(case(A, "passed"), case(B, "passed"), job="py311")
    upload(case(B, "failed"), case(A, "passed"), job="py312")
    answer = ask([B, A])
    rows = answer.json["nodes"]
    # B failed in the newer file: the older one, where it passed, gives its order.
    assert rows[0] == {"node": B, "file": passed_old.pk, "position": 1, "outcome": "passed"}
    # A passed in both: the newest file's.
    newest = JUnitFile.objects.latest("created_at")
    assert rows[1] == {"node": A, "file": newest.pk, "position": 1, "outcome": "passed"}
    assert [f["id"] for f in answer.json["files"]] == [newest.pk, passed_old.pk]
    # Where it only failed, the file where it failed says so.
    upload(case(C, "failed"), job="py313")
    assert ask([C]).json["nodes"][0]["outcome"] == "failed"


def test_one_file_is_listed_once_up_to_the_last_test_asked(ask, upload):
    junit = upload(*(case(node, "passed") for node in (A, B, C, D, E)))
    answer = ask([B, D, A])
    assert [(f["id"], f["order"]) for f in answer.json["files"]] == [(junit.pk, [A, B, C, D])]
    assert [row["position"] for row in answer.json["nodes"]] == [1, 3, 0]


def test_reruns_take_one_place_in_the_order(ask, upload):
    # pytest-rerunfailures writes each attempt: A is listed twice, and counts once.
    upload(case(A, "rerun"), case(A, "passed"), case(B, "passed"), case(C, "passed"))
    answer = ask([C])
    assert answer.json["files"][0]["order"] == [A, B, C]
    assert answer.json["nodes"][0]["position"] == 2


def test_what_the_board_does_not_hold_is_unknown(ask, upload):
    upload(case(A, "passed"), case(B, "passed"), commit="c1")
    upload(case(C, "passed"), case(A, "passed"), commit="c2")
    # Nearly every test failing: an infrastructure failure, whose order is left aside.
    broken = [f"tests/test_b.py::test_{index}" for index in range(10)]
    upload(case(D, "failed"), *(case(node, "failed") for node in broken), commit="c1",
           job="broken-runner")
    assert JUnitFile.objects.get(job="broken-runner").infrastructure
    answer = ask([C, D, "tests/test_z.py::test_never_seen"], commit="c1")
    assert answer.status == 200
    assert answer.json["files"] == []
    assert [row["file"] for row in answer.json["nodes"]] == [None, None, None]
    assert answer.json["nodes"][0] == {"node": C, "file": None, "position": None,
                                       "outcome": None}
    assert ask([A], commit="c9").json["nodes"][0]["file"] is None


def test_it_takes_the_same_queries_for_one_test_as_for_many(ask, upload,
                                                          django_assert_max_num_queries):
    many = [f"tests/test_m.py::test_{index}" for index in range(200)]
    upload(*(case(node, "passed") for node in many))
    with django_assert_max_num_queries(8):
        answer = ask(many)
    assert [row["position"] for row in answer.json["nodes"]] == list(range(200))


@pytest.mark.parametrize(("raw", "commit", "status", "code"), [
    (b'{"nodes": []}', "c1", 422, "validation_failed"),
    (b'["tests/test_a.py::test_a", 7]', "c1", 422, "validation_failed"),
    (b"[", "c1", 400, "invalid_json"),
    (b'["tests/test_a.py::test_a"]', None, 422, None),
], ids=["not a list", "a row not an id", "not json", "no commit"])
def test_a_bad_request_is_refused_saying_why(ask, raw, commit, status, code):
    answer = ask(None, commit=commit, raw=raw)
    assert answer.status == status, answer.raw
    if code:
        assert answer.json["error"] == code
    if "7" in raw.decode():
        assert answer.json["details"][0]["row"] == 1


@pytest.mark.parametrize("commit", ["c1\x03", "x" * 201], ids=["a control character", "too long"])
def test_a_commit_that_is_no_label_is_refused_naming_it(ask, upload, commit):
    upload(case(A, "passed"))
    answer = ask([A], commit=commit)
    assert answer.status == 422, answer.raw
    assert answer.json["details"][0]["field"] == "commit"
