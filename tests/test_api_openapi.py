"""The OpenAPI document at /api/v1/openapi.json: valid, and describing every body.

That real answers match it is checked on every call the API tests make (tests/api_http.py).
"""

import json
import re

import jsonschema_rs
import pytest
import schemathesis
from schemathesis.specs.openapi.definitions import OPENAPI_31_VALIDATOR

from tests.api_http import schema_validator
from tests.helpers import measurement, record

OPERATIONS = {
    ("get", "/api/v1/suites/{suite}/ledger"),
    ("post", "/api/v1/suites/{suite}/reports"),
    ("post", "/api/v1/suites/{suite}/verdicts"),
    ("post", "/api/v1/suites/{suite}/junit"),
    ("get", "/api/v1/suites/{suite}/trends"),
    ("get", "/api/v1/suites/{suite}/status"),
    ("get", "/api/v1/suites/{suite}/targets"),
    ("post", "/api/v1/suites/{suite}/tiers"),
    ("post", "/api/v1/suites/{suite}/junit/order"),
    ("post", "/api/v1/suites/{suite}/failures"),
    ("post", "/api/v1/suites/{suite}/diagnoses"),
    ("put", "/api/v1/suites/{suite}/codeowners"),
    ("put", "/api/v1/suites/{suite}/impact"),
    ("post", "/api/v1/suites/{suite}/impact/nodes"),
    ("get", "/api/v1/suites/{suite}/reports"),
    ("get", "/api/v1/suites/{suite}/verdicts"),
    ("get", "/api/v1/suites/{suite}/reports/{id}"),
    ("get", "/api/v1/suites/{suite}/verdicts/{id}"),
    ("get", "/api/v1/suites/{suite}/entries/{id}/events"),
    ("get", "/api/v1/token"),
}
# The answers that are files rather than JSON: their media type.
TEXT_ANSWERS = {("/api/v1/suites/{suite}/targets", "200"): "text/plain"}

# The posts that store nothing: a body too long for a URL, answered with 200.
LOOKUPS = {"/api/v1/suites/{suite}/tiers", "/api/v1/suites/{suite}/junit/order",
           "/api/v1/suites/{suite}/impact/nodes", "/api/v1/suites/{suite}/failures",
           "/api/v1/suites/{suite}/diagnoses"}

# The uploads the gate judges, which answer with its exit code; passive evidence (JUnit)
# has none.
GATE_UPLOADS = {"/api/v1/suites/{suite}/reports", "/api/v1/suites/{suite}/verdicts"}


def _no_duplicate_keys(pairs):
    keys = [key for key, _ in pairs]
    assert len(keys) == len(set(keys)), f"duplicate keys: {keys}"
    return dict(pairs)


@pytest.fixture
def document(board):
    answer = board.get("/api/v1/openapi.json")
    assert answer.status == 200
    return json.loads(answer.raw, object_pairs_hook=_no_duplicate_keys)


def operations(document):
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            yield method, path, operation


def request_schema(document, path):
    body = document["paths"][path]["post"]["requestBody"]
    return schema_validator(body["content"]["application/json"]["schema"])


def test_the_document_validates(document):
    assert document["openapi"].startswith("3.1")
    assert [e.message for e in OPENAPI_31_VALIDATOR.iter_errors(document)] == []
    schemathesis.openapi.from_dict(document).validate()
    for name, schema in document["components"]["schemas"].items():
        assert jsonschema_rs.meta.is_valid(schema), name


def test_every_reference_resolves(document):
    text = json.dumps(document)
    names = set(re.findall(r'"#/components/schemas/([^"]+)"', text))
    assert names and names <= set(document["components"]["schemas"])


def test_it_lists_every_endpoint_behind_the_bearer_scheme(document):
    assert {(m, p) for m, p, _ in operations(document)} == OPERATIONS
    scheme = document["components"]["securitySchemes"]["SuiteToken"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    for _, _, operation in operations(document):
        assert operation["security"] == [{"SuiteToken": []}]


def test_every_request_and_response_body_is_described(document):
    for method, path, operation in operations(document):
        responses = operation["responses"]
        assert "401" in responses, path
        if "{suite}" in path:
            assert "403" in responses, path
        # What takes input beyond the suite (a query, a body) may find it invalid.
        takes_input = "requestBody" in operation or any(
            parameter["in"] == "query" for parameter in operation.get("parameters", []))
        assert ("422" in responses) is takes_input, path
        for status, response in responses.items():
            if status == "304":
                assert "content" not in response
                continue
            media = TEXT_ANSWERS.get((path, status), "application/json")
            assert response["content"][media]["schema"], (path, status)
        if method in ("post", "put"):
            assert operation["requestBody"]["required"] is True
            assert {"200", "400", "413", "415"} <= set(responses)
        if method == "post":
            assert ("201" in responses) is (path not in LOOKUPS), path
        if method == "put":  # it replaces what the path names: 200, never 201
            assert "201" not in responses, path
        if method == "post" and path in GATE_UPLOADS:
            assert "Flakeboard-Exit-Code" in responses["201"]["headers"]
    ledger = document["paths"]["/api/v1/suites/{suite}/ledger"]["get"]["responses"]
    assert "ETag" in ledger["200"]["headers"] and "ETag" in ledger["304"]["headers"]


def test_errors_share_one_documented_shape(document):
    error = document["components"]["schemas"]["ErrorOut"]
    assert set(error["properties"]) == {"error", "message", "details"}
    detail = document["components"]["schemas"]["ErrorDetail"]
    assert {"row", "field", "code", "message"} <= set(detail["properties"])


def test_the_report_body_is_the_seeds_list_or_the_envelope(document):
    schema = request_schema(document, "/api/v1/suites/{suite}/reports")
    seed_row = {"nodeid": "tests/a.py::test_x", "n": 200, "fails": 5, "upper95": 0.0572,
                "seed_base": 9137}
    assert schema.is_valid([seed_row, measurement("tests/a.py::test_y")])
    assert schema.is_valid({"measurements": [seed_row], "commit": "abc", "branch": "main",
                            "evidence": "ci/run-1", "selected_total": 400})
    assert schema.is_valid([])
    for bad in ([measurement("a::x", n=0)], [measurement("a::x", fails=-1)],
                [measurement("")], [{"n": 1, "fails": 0}], {"measurements": "no"}):
        assert not schema.is_valid(bad), bad


def test_the_signals_body_has_the_closed_vocabulary(document):
    schema = request_schema(document, "/api/v1/suites/{suite}/verdicts")
    assert schema.is_valid([record("a::x", freeze_expires="2026-11-14", seed=7,
                                   fixture_manifest="sha256:abc", tier=2)])
    assert schema.is_valid({"records": [record("a::x")], "patch": "p-1"})
    for bad in ([record("a::x", prop="maybe")], [record("a::x", lock="loose")],
                [record("a::x", status="flaky")], [record("a::x", tier=3)]):
        assert not schema.is_valid(bad), bad
    enum = document["components"]["schemas"]["PropertyCheck"]["enum"]
    assert set(enum) == {"pass", "fail", "not_run"}


def test_the_interactive_docs_need_no_inline_script(board):
    answer = board.get("/api/v1/docs")
    assert answer.status == 200
    page = answer.raw.decode()
    assert "swagger-ui-bundle.js" in page and "cdn." not in page
    scripts = re.findall(r"<script([^>]*)>", page)
    assert scripts and all("src=" in s or "application/json" in s for s in scripts)
    assert "script-src 'self'" in answer.headers["Content-Security-Policy"]


def test_the_document_is_built_once_and_each_caller_gets_a_copy(monkeypatch):
    """The document follows from the code alone: a process builds it once for each path
    prefix (web/api/openapi.py), and what one caller does to its copy no other sees."""
    import ninja.main

    from flakeboard.api import api

    built = []
    real = ninja.main.get_schema
    monkeypatch.setattr(ninja.main, "get_schema",
                        lambda **kwargs: built.append(kwargs["path_prefix"]) or real(**kwargs))
    prefix = "/api/v1-built-once/"
    first = api.get_openapi_schema(path_prefix=prefix)
    first["paths"].clear()
    first["components"]["schemas"].clear()
    again = api.get_openapi_schema(path_prefix=prefix)
    assert built == [prefix]
    assert {path.removeprefix(prefix) for path in again["paths"]} == {
        path.removeprefix("/api/v1/") for _, path in OPERATIONS}
    assert "PropertyCheck" in again["components"]["schemas"]
