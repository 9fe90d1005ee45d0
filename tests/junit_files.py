"""JUnit files for the tests: the real ones in tests/corpus/junit/ (see its README), and
small ones made here, in the shape pytest writes (``junit_xml``)."""

from __future__ import annotations

import gzip
from pathlib import Path
from xml.sax.saxutils import quoteattr

from django.db.models import Model

from junit.models import CaseResult, JobOutcome, JobRun, JUnitFile, NodeDay, SignatureDay
from ledger.models import Node

CORPUS = Path(__file__).parent / "corpus" / "junit"
XML = "application/xml"
# What a JUnit upload may store: a refused one changes none of them.
STORED = (JUnitFile, CaseResult, JobRun, JobOutcome, NodeDay, SignatureDay, Node)


def corpus(name: str) -> bytes:
    return (CORPUS / name).read_bytes()


def corpus_ids(name: str) -> list[str]:
    """The node ids pytest collected for a real file, in its order."""
    return (CORPUS / name).read_text(encoding="utf-8").splitlines()


def _testcase(classname: str, name: str, outcome: str, message: str = "boom") -> str:
    body = {"passed": "", "failed": f"<failure message={quoteattr(message)}>trace</failure>",
            "error": f"<error message={quoteattr(message)}>trace</error>",
            "skipped": "<skipped message='later'/>", "rerun": ""}[outcome]
    return (f"<testcase classname={quoteattr(classname)} name={quoteattr(name)} "
            f'time="0.010">{body}</testcase>')


def junit_xml(*cases: tuple, suite: str = "pytest", root: str = "pytest tests") -> bytes:
    """A file as pytest writes it: each case (classname, name, outcome[, message]), where
    outcome is passed, failed, error or skipped (an attempt pytest-rerunfailures reran is
    written as passed: it carries nothing)."""
    body = "".join(_testcase(*case) for case in cases)
    return (f'<?xml version="1.0" encoding="utf-8"?><testsuites name={quoteattr(root)}>'
            f'<testsuite name={quoteattr(suite)} tests="{len(cases)}">{body}</testsuite>'
            f"</testsuites>").encode()


def gzipped(body: bytes) -> bytes:
    return gzip.compress(body, mtime=0)


def sizes() -> dict[str, int]:
    """How many rows each table a JUnit upload writes holds."""
    return {model.__name__: model.objects.count() for model in STORED}


def newest(model: type[Model]):
    return model.objects.order_by("-pk").first()
