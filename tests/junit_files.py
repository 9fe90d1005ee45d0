"""JUnit files for the tests: the real ones in tests/corpus/junit/ (see its README), and
small ones made here, in the shape pytest writes (``junit_xml``)."""

from __future__ import annotations

import gzip
from contextlib import contextmanager
from pathlib import Path
from xml.sax.saxutils import quoteattr

from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.models import Max, Model, Sum

from junit.models import CaseResult, JUnitFile, NodeDay, SignatureDay
from junit.rules import is_flaky
from junit.selectors import counted_results
from ledger.models import Node

CORPUS = Path(__file__).parent / "corpus" / "junit"
XML = "application/xml"
# What a JUnit upload may store: a refused one changes none of them.
STORED = (JUnitFile, CaseResult, NodeDay, SignatureDay, Node)


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


def job_counts(flaky_failures: bool = False) -> list[tuple]:
    """Each job's counts as detection reads them, in order: (suite, commit, job, node id,
    passes, failures, flaky, the last day a counted file of the job held the test), for
    the tests that ran; with ``flaky_failures``, the flaky failures its files added last."""
    rows = (counted_results().exclude(passes=0, failures=0)
            .values_list("file__suite__slug", "file__commit", "file__job", "node__nodeid")
            .annotate(Sum("passes"), Sum("failures"), Max("day"), Sum("flaky_failures")))
    return sorted((*key, passes, failures, is_flaky(passes, failures), day,
                   *([added] if flaky_failures else []))
                  for *key, passes, failures, day, added in rows)


@contextmanager
def migrated_back(target: tuple[str, str]):
    """The database migrated back to ``target`` for the block, which gets the models as
    they were then; migrated forward to the newest migrations after it, whatever the block
    does."""
    executor = MigrationExecutor(connection)
    try:
        executor.migrate([target])
        yield executor.loader.project_state(target).apps
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
