"""The suite's impact map (SPEC 2.4c): PUT /api/v1/suites/{suite}/impact checks the map
whole and replaces the suite's; POST .../impact/nodes answers the tests that executed any
of the paths asked, with which. (Who may call them: tests/test_access_api.py's table.)"""

from __future__ import annotations

import pytest
from django.test import override_settings

from runs.models import ImpactMap, ImpactPath
from tests.api_http import API, new_token
from tests.helpers import body

MAP = {
    "tests/test_a.py::test_one": ["src/a.py", "src/util.py"],
    "tests/test_a.py::test_two": ["src/a.py"],
    "tests/test_b.py::test_b": ["src/b.py", "src/util.py", "src/b.py"],
    "tests/test_c.py::test_pure": [],
}


@pytest.fixture
def impact(board, suite):
    write, read = new_token(suite, "write"), new_token(suite, "read")

    def put(data, raw=None):
        return board.call("PUT", f"{API}/suites/{suite.slug}/impact",
                          body=raw if raw is not None else body(data), token=write)

    def nodes(paths):
        return board.post(f"{API}/suites/{suite.slug}/impact/nodes", body(paths), token=read)

    return put, nodes


def test_the_map_is_stored_and_answers_the_tests_of_the_asked_paths(impact):
    put, nodes = impact
    answer = put({"commit": "ABC123", "map": MAP})
    assert answer.status == 200, answer.raw
    assert {k: answer.json[k] for k in ("suite", "commit", "nodes", "paths")} == {
        "suite": "acme", "commit": "abc123", "nodes": 4, "paths": 3}
    asked = nodes(["src/util.py", "src/b.py", "README.md"])
    assert asked.status == 200, asked.raw
    assert asked.json["nodes"] == [
        {"node": "tests/test_a.py::test_one", "paths": ["src/util.py"]},
        {"node": "tests/test_b.py::test_b", "paths": ["src/b.py", "src/util.py"]},
    ]
    assert asked.json["map"]["nodes"] == 4
    assert asked.json["map"]["commit"] == "abc123"
    # A repeated path is stored once.
    assert ImpactPath.objects.filter(node="tests/test_b.py::test_b").count() == 2


def test_a_new_map_replaces_the_suites_whole(impact, suite, other_suite):
    put, nodes = impact
    put({"commit": "c1", "map": MAP})
    ImpactPath.objects.create(suite=other_suite, node="tests/test_x.py::t", path="src/a.py")
    answer = put({"commit": "c2", "map": {"tests/test_d.py::test_d": ["src/a.py"]}})
    assert answer.status == 200, answer.raw
    assert nodes(["src/a.py"]).json["nodes"] == [
        {"node": "tests/test_d.py::test_d", "paths": ["src/a.py"]}]
    assert ImpactMap.objects.get(suite=suite).commit == "c2"
    assert ImpactPath.objects.filter(suite=suite).count() == 1
    # Another suite's map is its own.
    assert ImpactPath.objects.filter(suite=other_suite).count() == 1


def test_without_a_map_no_test_is_named(impact):
    _, nodes = impact
    assert nodes(["src/a.py"]).json == {"suite": "acme", "map": None, "nodes": []}


@pytest.mark.parametrize(("data", "row", "field", "words"), [
    ({"map": {"tests/test_a.py::t": ["src/a.py", "/abs/b.py"]}}, 0, "paths",
     "node 'tests/test_a.py::t': path 1 must be a path relative to the repository's root"),
    ({"map": {"tests/test_a.py::t": [], "tests/test_b.py::t": "src/a.py"}}, 1, "paths",
     "node 'tests/test_b.py::t': its paths must be a list (got a string)"),
    ({"map": {"tests/test_a.py::t": ["../up.py"]}}, 0, "paths", "path 0 must be a path"),
    ({"map": {"tests/test_a.py::t": [3]}}, 0, "paths", "path 0 must be a string"),
    ({"map": {"": ["src/a.py"]}}, 0, "node", "node ''"),
    ({"map": {"t::x": ["src/a.py"]}, "branch": "main"}, None, "branch", "'branch' is not a"),
    ({"commit": "a\nb", "map": {}}, None, "commit", ""),
    # Not a string, however empty: refused, not read as no commit.
    *(({"commit": value, "map": {}}, None, "commit", "") for value in ([], {}, 0, False, None)),
    ({"commit": "c1"}, None, "map", "the body must be an object whose 'map' is an object"),
    ([], None, "map", "(got a list)"),
])
def test_a_refused_map_names_the_node_and_field_and_stores_nothing(
        impact, suite, data, row, field, words):
    put, _ = impact
    put({"commit": "c1", "map": MAP})
    answer = put(data)
    assert answer.status == 422, answer.raw
    detail = answer.json["details"][0]
    assert (detail["row"], detail["field"]) == (row, field), answer.json
    assert words in detail["message"]
    assert ImpactMap.objects.get(suite=suite).commit == "c1"
    assert ImpactPath.objects.filter(suite=suite).count() == 5


def test_a_map_over_the_upload_limit_is_refused(impact):
    put, _ = impact
    with override_settings(UPLOAD_MAX_RECORDS=2):
        answer = put({"map": MAP})
    assert (answer.status, answer.error) == (413, "too_many_records"), answer.raw


def test_not_json_is_400(impact):
    put, _ = impact
    assert put(None, raw=b"{").status == 400


@pytest.mark.parametrize(("paths", "row", "words"), [
    (["src/a.py", "/etc/passwd"], 1, "path must be a path relative"),
    (["src/a.py", None], 1, "path must be a string (got null)"),
])
def test_a_refused_question_names_its_row(impact, paths, row, words):
    _, nodes = impact
    answer = nodes(paths)
    assert answer.status == 422, answer.raw
    detail = answer.json["details"][0]
    assert (detail["row"], detail["field"]) == (row, "path")
    assert words in detail["message"]


@pytest.mark.parametrize(("question", "status", "words"), [
    ({"paths": ["src/a.py"]}, 422, "the body must be a list of paths (got an object)"),
    (["src/a.py", "src/b.py", "src/c.py"], 413, "the upload holds 3 paths, over the limit of 2"),
])
def test_a_question_that_is_not_a_list_of_paths_within_the_limit_is_refused_whole(
        impact, question, status, words):
    _, nodes = impact
    with override_settings(UPLOAD_MAX_RECORDS=2):
        answer = nodes(question)
    assert answer.status == status, answer.raw
    assert words in answer.json["details"][0]["message"]
