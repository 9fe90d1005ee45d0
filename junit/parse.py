"""Reading a JUnit XML file, whole, before anything is stored. No Django.

The body is parsed with defusedxml, which refuses a DTD, entity declarations and external
references before any is expanded or fetched: billion laughs, external entities and any
DOCTYPE are refused, not defused. A gzip body (``Content-Encoding: gzip``) is inflated
under the same limit as any body, and inflating stops as soon as the output passes it, so
a gzip bomb costs no more than the limit.

The root is ``<testsuites>`` or a bare ``<testsuite>``; test suites may nest; namespaces
are ignored. Each ``<testcase>`` becomes a ``Case``: its node id (``junit.nodeids``)
and its attempts (``junit.rules``). An ``<error>`` or ``<failure>``
outside any testcase, pytest's INTERNALERROR testcase, jest-junit's "Test suite failed to
run" and gotestsum's ``TestMain`` failure (the test binary failed outside any test) count
as errors outside the tests.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from xml.etree.ElementTree import Element, ParseError, TreeBuilder
from xml.parsers.expat import ErrorString

import defusedxml.ElementTree as DefusedElementTree
from defusedxml import DefusedXmlException, DTDForbidden, EntitiesForbidden

from flakeboard import rules as gate_rules
from flakeboard.rules.signatures import first_line
from ledger.messages import phrase
from ledger.refusals import Code, WireProblem

from . import nodeids
from .rules import Attempt, Outcome, Producer

MAX_PROBLEMS = 50
ELEMENTS_PER_CASE = 20  # a testcase, its results, reruns, outputs and properties, and more
# Elements open at once, the root included: far more than any writer nests test suites,
# and refused as the parser reads, so a deep file never becomes a deep tree.
MAX_DEPTH = 64
FEED_CHUNK = 64 * 1024  # bytes handed to the parser at a time
ROOTS = ("testsuites", "testsuite")
OWN_OUTCOMES = {"failure": Outcome.FAILED, "error": Outcome.ERROR, "skipped": Outcome.SKIPPED}
# Maven Surefire's failed attempts of a testcase: before the one it reports, and after.
BEFORE = {"flakyFailure": Outcome.FAILED, "flakyError": Outcome.ERROR}
AFTER = {"rerunFailure": Outcome.FAILED, "rerunError": Outcome.ERROR}
GZIP = ("gzip", "x-gzip")


class JUnitInvalid(Exception):
    """The file is refused whole; nothing of it is stored."""

    def __init__(self, code: str, message: str, problems: list[WireProblem] = (), total=None):
        self.code = code
        self.problems = list(problems)[:MAX_PROBLEMS]
        more = (len(problems) if total is None else total) - 1
        if self.problems:
            message = str(self.problems[0])
        self.message = message + (f" (and {more} more problem{'s' * (more > 1)})"
                                  if more > 0 else "")
        super().__init__(self.message)


def _refused(code: str, message: str) -> JUnitInvalid:
    return JUnitInvalid(code, message, [WireProblem(code, message)])


@dataclass(frozen=True, slots=True)
class Case:
    """One ``<testcase>`` element: where it stands, its node id, and its attempts in
    order. ``written`` is pytest's (classname, name) when the id is a guess that a node
    the suite knows may correct (``junit.nodeids``, rule 2), else None."""

    position: int
    nodeid: str
    written: tuple[str, str] | None
    attempts: tuple[Attempt, ...]


@dataclass
class ParsedFile:
    producer: Producer
    cases: list[Case] = field(default_factory=list)
    errors_outside_tests: int = 0


# --- the body ----------------------------------------------------------------------------


def inflated(body: bytes, content_encoding: str, limit: int) -> bytes:
    """The body as sent, or gunzipped (every member) and refused once past ``limit``."""
    encoding = content_encoding.strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding not in GZIP:
        raise _refused("unsupported_encoding",
                       f"Content-Encoding {content_encoding!r} is not taken: send gzip or none")
    out, rest = bytearray(), body
    try:
        while rest:
            gunzip = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)
            out += gunzip.decompress(rest, limit + 1 - len(out))
            while gunzip.unconsumed_tail and len(out) <= limit:
                out += gunzip.decompress(gunzip.unconsumed_tail, limit + 1 - len(out))
            if len(out) > limit:
                raise _refused("too_large", f"The body is over the upload limit of {limit} "
                                            f"bytes once decompressed.")
            if not gunzip.eof:
                raise _refused("invalid_gzip", "The gzip body is cut short")
            rest = gunzip.unused_data
    except zlib.error as exc:
        raise _refused("invalid_gzip", f"The body is not valid gzip: {exc}") from None
    return bytes(out)


class _TooManyElements(Exception):
    pass


class _TooDeep(Exception):
    pass


class _CountingBuilder(TreeBuilder):
    """The tree, refused past ``limit`` elements or ``MAX_DEPTH`` elements open at once: a
    body of many small elements would otherwise cost far more memory than its bytes, and a
    deep one a tree that every walk of it pays for."""

    def __init__(self, limit: int):
        super().__init__()
        self.left = limit
        self.depth = 0

    def start(self, tag, attrs):
        self.left -= 1
        if self.left < 0:
            raise _TooManyElements
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _TooDeep
        return super().start(tag, attrs)

    def end(self, tag):
        self.depth -= 1
        return super().end(tag)


def _root(body: bytes, max_elements: int) -> Element:
    parser = DefusedElementTree.DefusedXMLParser(
        target=_CountingBuilder(max_elements), forbid_dtd=True, forbid_entities=True,
        forbid_external=True)
    try:
        # Fed in chunks, so the parser's own buffer stays small whatever the body's size.
        for start in range(0, len(body), FEED_CHUNK):
            parser.feed(body[start:start + FEED_CHUNK])
        root = parser.close()
    except _TooDeep:
        raise _refused("too_deep", f"The file nests elements more than {MAX_DEPTH} deep, "
                                   "the limit of one upload") from None
    except _TooManyElements:
        raise _refused("too_many_elements", f"The file holds more than {max_elements:,} XML "
                       "elements, the limit of one upload (UPLOAD_MAX_RECORDS)") from None
    except DTDForbidden:
        raise _refused("forbidden_xml", "The XML declares a DTD (<!DOCTYPE …>), which is "
                                        "refused: a JUnit file needs none") from None
    except EntitiesForbidden:
        raise _refused("forbidden_xml", "The XML declares entities, which are refused") from None
    except DefusedXmlException:
        raise _refused("forbidden_xml", "The XML refers to an external resource, which is "
                                        "refused") from None
    except ParseError as exc:
        line, column = exc.position
        raise _refused("invalid_xml", f"The body is not well-formed XML: {ErrorString(exc.code)}"
                                      f" at line {line}, column {column + 1}") from None
    if any(element.tag[:1] == "{" for element in root.iter()):
        for element in root.iter():
            element.tag = element.tag.rpartition("}")[2]
    if root.tag not in ROOTS:
        raise _refused("not_junit", f"The root element is <{root.tag}>: a JUnit file's is "
                                    f"<testsuites> or <testsuite>")
    return root


def _producer(root: Element) -> Producer:
    """Who wrote the file, from what each producer always writes."""
    if root.get("name") == "pytest tests" or any(
            suite.get("name") == "pytest" for suite in root.iter("testsuite")):
        return Producer.PYTEST
    if root.get("name") == "jest tests":
        return Producer.JEST
    properties = {prop.get("name", "") for prop in root.iter("property")}
    if "go.version" in properties:
        return Producer.GOTESTSUM
    if any(name.startswith("java.") for name in properties) or any(
            next(root.iter(tag), None) is not None for tag in (*BEFORE, *AFTER)):
        return Producer.SUREFIRE
    if any(case.get("file", "").endswith(".py") for case in root.iter("testcase")):
        return Producer.PYTEST
    return Producer.OTHER


# --- the testcases -----------------------------------------------------------------------


def _message(element: Element, producer: Producer) -> str:
    """A failure's first line: its message, else its text (or Surefire's stackTrace)."""
    text = element.text or ""
    if not text.strip() and (trace := element.find("stackTrace")) is not None:
        text = trace.text or ""
    if producer is Producer.GOTESTSUM:  # message="Failed"; the text is go test's output
        lines = [line for line in text.splitlines() if not line.lstrip().startswith(
            ("=== ", "--- "))]
        return first_line("\n".join(lines)) or first_line(element.get("message"))
    return first_line(element.get("message")) or first_line(text)


def _duration(value: str | None) -> float | None:
    try:
        seconds = float((value or "").replace(",", ""))
    except ValueError:
        return None
    return seconds if 0 <= seconds < float("inf") else None


def _attempts(testcase: Element, producer: Producer) -> tuple[Attempt, ...]:
    own, before, after = Attempt(Outcome.PASSED, _duration(testcase.get("time"))), [], []
    if not len(testcase):  # a passing test, the common case
        return (own,)
    for child in testcase:
        # The first result element says how the attempt ended; a failure outranks an error
        # (pytest writes a test that failed and then errored in teardown with both).
        if (child.tag in OWN_OUTCOMES and own.outcome is Outcome.PASSED) or (
                child.tag == "failure" and own.outcome is not Outcome.FAILED):
            own = Attempt(OWN_OUTCOMES[child.tag], own.duration, _message(child, producer))
        elif child.tag in BEFORE:
            before.append(Attempt(BEFORE[child.tag], None, _message(child, producer)))
        elif child.tag in AFTER:
            after.append(Attempt(AFTER[child.tag], None, _message(child, producer)))
    return (*before, own, *after)


def _outside_tests(testcase: Element, producer: Producer) -> bool:
    """A testcase that stands for a failure outside any test."""
    if producer is Producer.PYTEST:
        return testcase.get("classname") == "pytest" and testcase.get("name") == "internal"
    if producer is Producer.JEST:
        return testcase.get("classname") == "Test suite failed to run"
    if producer is Producer.GOTESTSUM:
        return (testcase.get("name") == "TestMain" and not testcase.get("classname")
                and testcase.find("failure") is not None)
    return False


def _nodeid(testcase: Element, producer: Producer, suite: str):
    """The testcase's node id, and what pytest wrote when that id is a guess."""
    classname, name = testcase.get("classname", ""), testcase.get("name", "")
    file = testcase.get("file", "").replace("\\", "/")
    if producer is not Producer.PYTEST:
        return nodeids.generic_nodeid(classname, name, file, suite), None
    written = None if nodeids.file_fits(classname, file) else (classname, name)
    return nodeids.pytest_nodeid(classname, name, file), written


def _problems(testcase: Element, position: int, nodeid: str):
    if not testcase.get("name"):
        yield WireProblem(Code.MISSING_FIELD, "a testcase needs a name", position, "name")
    # Control characters are escaped and XML holds no lone surrogate: only the length
    # can be wrong.
    elif len(nodeid) > gate_rules.NODEID_MAX_LENGTH and (
            problem := gate_rules.nodeid_problem(nodeid)):
        yield WireProblem(Code.INVALID_NODEID, "its node id " + phrase(
            problem, gate_rules.NODEID_MAX_LENGTH), position, "name")


def parse_junit(body: bytes, *, max_cases: int) -> ParsedFile:
    """The file, whole: every testcase with its node id and attempts; or JUnitInvalid."""
    root = _root(body, max_elements=max_cases * ELEMENTS_PER_CASE)
    parsed = ParsedFile(_producer(root))
    problems = []
    # Depth first, in document order, each element with its nearest test suite's name.
    stack = [(root, root.get("name", ""))]
    while stack:
        element, suite = stack.pop()
        if element.tag == "testcase":
            position = len(parsed.cases)
            if position == max_cases:
                raise _refused("too_many_records", f"The file holds more than {max_cases:,} "
                               "testcases, the limit of one upload (UPLOAD_MAX_RECORDS)")
            nodeid, written = _nodeid(element, parsed.producer, suite)
            problems.extend(_problems(element, position, nodeid))
            parsed.cases.append(
                Case(position, nodeid, written, _attempts(element, parsed.producer)))
            parsed.errors_outside_tests += _outside_tests(element, parsed.producer)
        elif element.tag in ("error", "failure"):
            parsed.errors_outside_tests += 1
        elif element.tag in ROOTS:
            name = element.get("name", "") if element.tag == "testsuite" else suite
            stack.extend((child, name or suite) for child in reversed(element))
    if problems:
        raise JUnitInvalid("validation_failed", "", problems)
    return parsed
