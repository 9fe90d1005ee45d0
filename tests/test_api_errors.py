"""Every API error has one shape, as docs/api.md gives it: ``{"error", "message",
"details"}``, each detail with its ``row``, ``field``, ``code`` and ``message``. A query
parameter refused is 422 ``invalid_request`` on every endpoint, naming the parameter in
``field`` with ``row`` null; what an upload holds refused is ``validation_failed``."""

from __future__ import annotations

import pytest

from tests.api_http import API, new_token, openapi_document
from tests.helpers import body, measurement

DETAIL_KEYS = {"row", "field", "code", "message"}


@pytest.mark.parametrize(("path", "query", "field"), [
    ("reports", [("page", "1"), ("page", "2")], "page"),
    ("reports", [("per_page", "0")], "per_page"),
    ("reports", [("commit", "c\x01")], "commit"),
    ("verdicts", [("patch", "p\x01")], "patch"),
    ("trends", [("start", "2026-01-01")], "start"),
    ("trends", [("from", "1999-12-31")], "from"),
    ("trends", [("bucket", "month")], "bucket"),
    ("targets", [("limit", "many")], "limit"),
    ("ledger", [("view", "everything")], "view"),
], ids=["repeated", "out-of-range", "control-character", "patch-filter", "renamed",
        "before-2000", "not-a-choice", "not-a-number", "unknown-view"])
def test_a_refused_query_parameter_is_invalid_request_naming_it(board, suite, path, query,
                                                                field):
    answer = board.get(f"{API}/suites/{suite.slug}/{path}", token=new_token(suite, "read"),
                       query=query)
    assert (answer.status, answer.error) == (422, "invalid_request"), answer.raw
    details = answer.json["details"]
    assert details and all(set(detail) == DETAIL_KEYS for detail in details), details
    assert [(d["row"], d["field"]) for d in details] == [(None, field)]


def test_an_upload_refused_names_its_row_and_field_in_the_same_shape(board, suite):
    rows = [measurement("tests/a.py::test_a"), {**measurement("tests/a.py::test_b"), "n": 0}]
    answer = board.report(suite.slug, new_token(suite), body(rows))
    assert (answer.status, answer.error) == (422, "validation_failed")
    assert [(set(d), d["row"], d["field"]) for d in answer.json["details"]] == [
        (DETAIL_KEYS, 1, "n")]


def test_the_document_says_every_detail_names_its_row_and_field():
    detail = openapi_document()["components"]["schemas"]["ErrorDetail"]
    assert set(detail["required"]) == DETAIL_KEYS


@pytest.mark.parametrize(("path", "query", "field"), [
    ("tiers", [("commit", "c" * 201)], "commit"),
    ("junit/order", [("commit", "c\x03")], "commit"),
    ("junit/order", [], "commit"),
], ids=["tiers-commit-too-long", "order-commit-control-character", "order-without-commit"])
def test_a_reads_commit_is_refused_as_any_query_parameter(board, suite, path, query, field):
    answer = board.post(f"{API}/suites/{suite.slug}/{path}", b'["tests/a.py::test_a"]',
                        token=new_token(suite, "read"), query=query)
    assert (answer.status, answer.error) == (422, "invalid_request"), answer.raw
    assert [(set(d), d["row"], d["field"]) for d in answer.json["details"]] == [
        (DETAIL_KEYS, None, field)]
