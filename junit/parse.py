"""Reading a JUnit XML file, whole, before anything is stored. No Django.

The body is parsed with defusedxml, which refuses a DTD, entity declarations and external
references before any is expanded or fetched: billion laughs, external entities and any
DOCTYPE are refused, not defused. A gzip body (``Content-Encoding: gzip``) is inflated
under the same limit as any body, and inflating stops as soon as the output passes it, so
a gzip bomb costs no more than the limit.

The file is read in one pass as the parser reads it (``_Reader``, expat's handlers), into
its testcases and what tells its producer; no tree is built. The root is ``<testsuites>``
or a bare ``<testsuite>``; test suites may nest; namespaces are ignored. Each
``<testcase>`` becomes a ``Case``: its node id (``junit.nodeids``) and its attempts
(``junit.rules``). An ``<error>`` or ``<failure>``
outside any testcase, pytest's INTERNALERROR testcase, jest-junit's "Test suite failed to
run" and gotestsum's ``TestMain`` failure (the test binary failed outside any test) count
as errors outside the tests.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from xml.etree.ElementTree import ParseError
from xml.parsers.expat import ErrorString

import defusedxml.ElementTree as DefusedElementTree
from defusedxml import DefusedXmlException, DTDForbidden, EntitiesForbidden

from flakeboard import rules as gate_rules
from flakeboard.rules.signatures import first_line
from ledger.messages import phrase
from ledger.refusals import Code, WireProblem

from . import nodeids
from .rules import DURATION_MAX_S, Attempt, Outcome, Producer

MAX_PROBLEMS = 50
# A suite's tests are the same from one upload to the next: the node ids of the last this
# many pytest testcases read are kept for the process's later uploads (each a few hundred
# bytes), as the keys of their written forms are (``junit.nodes``).
IDS_KEPT = 16_384
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
RESULTS = (*OWN_OUTCOMES, *BEFORE, *AFTER)
# The elements that tell a file's producer (``_producer``), read wherever they stand.
CLUES = frozenset(("testsuite", "property", "testcase", *BEFORE, *AFTER))
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


@dataclass(slots=True)
class _Testcase:
    """A ``<testcase>`` as read: its test suite's name, its attributes, and its result
    elements (tag, ``message``, text: its own, or its first ``<stackTrace>``'s)."""

    suite: str
    attrs: dict[str, str]
    results: list[tuple[str, str | None, str]] = field(default_factory=list)


class _Reader:
    """The parser's target: the file read in one pass, as the parser reads it, into its
    testcases, what tells its producer, and its errors outside any testcase. No tree is
    built; past ``limit`` elements, or ``MAX_DEPTH`` elements open at once, it refuses:
    many small elements would cost far more memory than their bytes.

    A testcase or an ``<error>``/``<failure>`` counts where every element around it is a
    test suite, and a testcase's results are its own children; each result's text is the
    text before its first child (``Element.text``)."""

    def __init__(self, limit: int, max_cases: int):
        self.left, self.max_cases = limit, max_cases
        self.open: list[tuple[str, bool, str]] = []  # (tag, read, suite name) of each
        self.root, self.root_name = "", ""
        self.testcases: list[_Testcase] = []
        self.errors_outside_tests = 0
        self.clues: set[str] = set()
        self.clue_tags = set(CLUES)  # less those whose clue is found, or moot
        self.case: _Testcase | None = None
        self.case_depth = 0
        self.result: list | None = None  # [tag, message, own text, stackTrace's text]
        self.text: list[str] | None = None  # where the text read now goes, if anywhere

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        """expat's start handler: ``tag`` is ``namespace}name`` in a namespace, ``attrs``
        its attributes (a dict expat makes: ``parser``)."""
        self.left -= 1
        if self.left < 0:
            raise _TooManyElements
        depth = len(self.open) + 1
        if depth > MAX_DEPTH:
            raise _TooDeep
        if "}" in tag:  # namespaces are ignored
            tag = tag.rpartition("}")[2]
        self.text = None
        if tag in self.clue_tags:
            self._clue(tag, attrs)
        if depth == 1:
            self.root, self.root_name = tag, attrs.get("name", "")
            if self.root_name == "pytest tests":
                self.clue_tags.clear()  # pytest's, whatever follows (``_producer``)
            self.open.append((tag, True, self.root_name))
            return
        parent, parent_read, suite = self.open[-1]
        read = parent_read and parent in ROOTS
        if read:
            if tag == "testcase":
                self.case, self.case_depth = _Testcase(suite, attrs), depth
            elif tag == "testsuite":
                suite = attrs.get("name", "") or suite
            elif tag in ("error", "failure"):
                self.errors_outside_tests += 1
        elif self.case is not None:
            self._in_testcase(tag, attrs, depth)
        self.open.append((tag, read, suite))

    def _in_testcase(self, tag: str, attrs: dict[str, str], depth: int) -> None:
        if depth == self.case_depth + 1 and tag in RESULTS:
            self.result = [tag, attrs.get("message"), [], None]
            self.text = self.result[2]
        elif (depth == self.case_depth + 2 and tag == "stackTrace" and self.result is not None
              and self.result[3] is None):
            self.result[3] = self.text = []

    def _clue(self, tag: str, attrs: dict[str, str]) -> None:
        """What tells the file's producer (``_producer``), wherever it stands."""
        if tag == "testsuite":
            if attrs.get("name") == "pytest":
                self.clues.add("pytest suite")
                self.clue_tags.clear()  # pytest's, whatever follows (``_producer``)
        elif tag == "property":
            name = attrs.get("name", "")
            if name == "go.version":
                self.clues.add("go")
            elif name.startswith("java."):
                self.clues.add("java")
        elif tag == "testcase":
            if attrs.get("file", "").endswith(".py"):
                self.clues.add("python file")
                self.clue_tags.discard(tag)
        else:  # Surefire's reruns
            self.clues.add("java")

    def end(self, _tag: str) -> None:
        self.text = None
        depth = len(self.open)
        self.open.pop()
        if self.case is None:
            return
        if depth == self.case_depth + 1 and self.result is not None:
            tag, message, own, trace = self.result
            text = "".join(own)
            if not text.strip() and trace is not None:
                text = "".join(trace)
            self.case.results.append((tag, message, text))
            self.result = None
        elif depth == self.case_depth:
            if len(self.testcases) <= self.max_cases:  # one more says there are too many
                self.testcases.append(self.case)
            self.case = None

    def data(self, text: str) -> None:
        if self.text is not None:
            self.text.append(text)

    def close(self) -> None:
        return None

    def parser(self):
        """defusedxml's parser (DTDs, entities and external references refused) with this
        reader's handlers set on its expat parser itself: ElementTree's own handlers, a
        Python call per element that builds what this reader builds again, are skipped."""
        parser = DefusedElementTree.DefusedXMLParser(
            target=self, forbid_dtd=True, forbid_entities=True, forbid_external=True)
        expat = parser.parser
        assert expat.buffer_text  # as this reader reads the text
        expat.ordered_attributes = False  # each element's attributes as a dict, made in C
        expat.StartElementHandler, expat.EndElementHandler = self.start, self.end
        return parser


def _read(body: bytes, max_cases: int) -> _Reader:
    max_elements = max_cases * ELEMENTS_PER_CASE
    reader = _Reader(max_elements, max_cases)
    parser = reader.parser()
    try:
        # Fed in chunks, so the parser's own buffer stays small whatever the body's size.
        for start in range(0, len(body), FEED_CHUNK):
            parser.feed(body[start:start + FEED_CHUNK])
        parser.close()
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
    if reader.root not in ROOTS:
        raise _refused("not_junit", f"The root element is <{reader.root}>: a JUnit file's is "
                                    f"<testsuites> or <testsuite>")
    return reader


def _producer(reader: _Reader) -> Producer:
    """Who wrote the file, from what each producer always writes."""
    if reader.root_name == "pytest tests" or "pytest suite" in reader.clues:
        return Producer.PYTEST
    if reader.root_name == "jest tests":
        return Producer.JEST
    if "go" in reader.clues:
        return Producer.GOTESTSUM
    if "java" in reader.clues:
        return Producer.SUREFIRE
    if "python file" in reader.clues:
        return Producer.PYTEST
    return Producer.OTHER


# --- the testcases -----------------------------------------------------------------------


def _message(message: str | None, text: str, producer: Producer) -> str:
    """A failure's first line: its message, else its text (or Surefire's stackTrace)."""
    if producer is Producer.GOTESTSUM:  # message="Failed"; the text is go test's output
        lines = [line for line in text.splitlines() if not line.lstrip().startswith(
            ("=== ", "--- "))]
        return first_line("\n".join(lines)) or first_line(message)
    return first_line(message) or first_line(text)


def _duration(value: str | None) -> float | None:
    if not value:
        return None
    try:
        seconds = float(value.replace(",", "") if "," in value else value)
    except ValueError:
        return None
    return seconds if 0 <= seconds <= DURATION_MAX_S else None


def _attempts(testcase: _Testcase, producer: Producer) -> tuple[Attempt, ...]:
    own = Attempt(Outcome.PASSED, _duration(testcase.attrs.get("time")))
    if not testcase.results:  # a passing test, the common case
        return (own,)
    before, after = [], []
    for tag, message, text in testcase.results:
        # The first result element says how the attempt ended; a failure outranks an error
        # (pytest writes a test that failed and then errored in teardown with both).
        if (tag in OWN_OUTCOMES and own.outcome is Outcome.PASSED) or (
                tag == "failure" and own.outcome is not Outcome.FAILED):
            own = Attempt(OWN_OUTCOMES[tag], own.duration, _message(message, text, producer))
        elif tag in BEFORE:
            before.append(Attempt(BEFORE[tag], None, _message(message, text, producer)))
        elif tag in AFTER:
            after.append(Attempt(AFTER[tag], None, _message(message, text, producer)))
    return (*before, own, *after)


def _outside_tests(testcase: _Testcase, producer: Producer) -> bool:
    """A testcase that stands for a failure outside any test."""
    attrs = testcase.attrs
    if producer is Producer.PYTEST:
        return attrs.get("classname") == "pytest" and attrs.get("name") == "internal"
    if producer is Producer.JEST:
        return attrs.get("classname") == "Test suite failed to run"
    if producer is Producer.GOTESTSUM:
        return (attrs.get("name") == "TestMain" and not attrs.get("classname")
                and any(tag == "failure" for tag, _, _ in testcase.results))
    return False


@lru_cache(maxsize=IDS_KEPT)
def _pytest_ids(classname: str, name: str, file: str) -> tuple[str, tuple[str, str] | None]:
    written = None if nodeids.file_fits(classname, file) else (classname, name)
    return nodeids.pytest_nodeid(classname, name, file), written


def _nodeid(attrs: dict[str, str], producer: Producer, suite: str):
    """The testcase's node id, and what pytest wrote when that id is a guess."""
    classname, name = attrs.get("classname", ""), attrs.get("name", "")
    file = attrs.get("file", "").replace("\\", "/")
    if producer is not Producer.PYTEST:
        return nodeids.generic_nodeid(classname, name, file, suite), None
    return _pytest_ids(classname, name, file)


def _problems(attrs: dict[str, str], position: int, nodeid: str):
    if not attrs.get("name"):
        yield WireProblem(Code.MISSING_FIELD, "a testcase needs a name", position, "name")
    # Control characters are escaped and XML holds no lone surrogate: only the length
    # can be wrong.
    elif len(nodeid) > gate_rules.NODEID_MAX_LENGTH and (
            problem := gate_rules.nodeid_problem(nodeid)):
        yield WireProblem(Code.INVALID_NODEID, "its node id " + phrase(
            problem, gate_rules.NODEID_MAX_LENGTH), position, "name")


def parse_junit(body: bytes, *, max_cases: int) -> ParsedFile:
    """The file, whole: every testcase with its node id and attempts; or JUnitInvalid."""
    reader = _read(body, max_cases)
    if len(reader.testcases) > max_cases:
        raise _refused("too_many_records", f"The file holds more than {max_cases:,} "
                       "testcases, the limit of one upload (UPLOAD_MAX_RECORDS)")
    parsed = ParsedFile(_producer(reader), errors_outside_tests=reader.errors_outside_tests)
    problems, producer, cases = [], parsed.producer, parsed.cases
    for position, testcase in enumerate(reader.testcases):
        attrs = testcase.attrs
        nodeid, written = _nodeid(attrs, producer, testcase.suite)
        if len(nodeid) > gate_rules.NODEID_MAX_LENGTH or not attrs.get("name"):
            problems.extend(_problems(attrs, position, nodeid))
        cases.append(Case(position, nodeid, written, _attempts(testcase, producer)))
        parsed.errors_outside_tests += _outside_tests(testcase, producer)
    if problems:
        raise JUnitInvalid("validation_failed", "", problems)
    return parsed
