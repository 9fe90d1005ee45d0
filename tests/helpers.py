"""Builders for upload bodies, the fixed calendar of the pure rules' tests, the URLs of a
suite's pages, and tables of test cases."""

import json
import re
from collections.abc import Callable
from datetime import date, timedelta
from fractions import Fraction

import pytest
from django.urls import reverse

from flakeboard.rules import EntryFacts
from ledger.models import text_key
from ledger.quarantine import quarantine_create
from ledger.refusals import UploadInvalid
from runs.ingest import report_ingest
from runs.models import Measurement, Report
from runs.wire import parse_report

# The rules never read the clock: their tests pass this day as today.
TODAY = date(2026, 3, 15)
YESTERDAY = TODAY - timedelta(days=1)
TOMORROW = TODAY + timedelta(days=1)
NEXT_WEEK = TODAY + timedelta(days=7)
NEXT_MONTH = TODAY + timedelta(days=30)
LONG_AGO = TODAY - timedelta(days=90)

# Ledger entries as the rules see them, on TODAY.
ACTIVE = EntryFacts(expires=NEXT_MONTH)
LAST_DAY = EntryFacts(expires=TODAY)  # expires today: still valid today
EXPIRED = EntryFacts(expires=YESTERDAY)
VIOLATING = EntryFacts(expires=NEXT_MONTH, tier_violation=True)


def body(data) -> bytes:
    return json.dumps(data).encode()


def write_upload(folder, name, data) -> str:
    """Write an upload body to folder/name; its name, as a CI command line gives it."""
    (folder / name).write_bytes(body(data))
    return name


def measurement(nodeid, n=200, fails=0, **extra):
    return {"nodeid": nodeid, "n": n, "fails": fails, **extra}


# The passing nodes that make_known adds, numbered from 0.
STEADY = "tests/test_steady.py::test_{}"


def make_known(suite, *rows, steady: int = 40) -> None:
    """One report, by ci, that makes the suite know ``steady`` passing nodes (STEADY) and
    the nodes of the measurement ``rows``: a test set large enough for the share cap to
    leave room for an entry or two (5% of 40 is two)."""
    filler = [measurement(STEADY.format(i)) for i in range(steady)]
    report_ingest(suite=suite, body=body([*filler, *rows]), actor="ci")


def record_sleeps(monkeypatch, command: str) -> list[float]:
    """The sleeps of a management command's backoff (``command``, its module), recorded
    instead of slept."""
    slept: list[float] = []
    monkeypatch.setattr(f"{command}.Command.sleep", staticmethod(slept.append))
    return slept


def quarantined(suite, today, expiring_in: dict[str, int]) -> dict:
    """A suite of 80 steady nodes and the given flaky ones, each quarantined by @finley for
    its number of days, on the evidence ci/run-100, ci/run-101, ... in order; by node."""
    make_known(suite, *(measurement(node, fails=8) for node in expiring_in), steady=80)
    return {
        node: quarantine_create(
            suite=suite, nodeid=node, owner="@finley", evidence=f"ci/run-{100 + i}", n=200,
            fails=8, expires=today + timedelta(days=days), actor="@finley", today=today,
        )
        for i, (node, days) in enumerate(expiring_in.items())
    }


def record(node, prop="pass", lock="match", status="stable", **extra):
    return {"node": node, "property_check": prop, "fixture_lock": lock, "flake_status": status,
            **extra}


def suite_pages(suite, *, entry, report, batch, node) -> dict[str, str]:
    """The pages of a suite an owner reads or acts on, by URL name, on the given rows (the
    batch's patch page too, when it names a patch)."""
    slug = suite.slug
    patch = {"patch": reverse("patch", args=[slug, batch.patch])} if batch.patch else {}
    return {
        **patch,
        "overview": reverse("overview", args=[slug]),
        "ledger": reverse("ledger", args=[slug]),
        "entry": reverse("entry", args=[slug, entry.pk]),
        "entry_new": reverse("entry_new", args=[slug]),
        "entry_renew": reverse("entry_renew", args=[slug, entry.pk]),
        "entry_clear": reverse("entry_clear", args=[slug, entry.pk]),
        "reports": reverse("reports", args=[slug]),
        "report": reverse("report", args=[slug, report.pk]),
        "verdicts": reverse("verdicts", args=[slug]),
        "batch": reverse("batch", args=[slug, batch.pk]),
        "node": node_page(slug, node),
        "flaky": reverse("flaky", args=[slug]),
        "connect": reverse("connect", args=[slug]),
        "owners": reverse("owners", args=[slug]),
    }


def node_page(slug: str, nodeid: str) -> str:
    """A node page's address: by the node id's key."""
    return reverse("node", args=[slug, text_key(nodeid)])


def field_errors(response, field: str) -> str:
    """The error list a form renders right after the field's input ("" when none)."""
    found = re.search(rf'<ul class="errorlist" id="id_{field}_error">(.*?)</ul>',
                      response.content.decode(), re.S)
    return found.group(1) if found else ""


# --- tables of test cases ------------------------------------------------------------------


def table(text: str, *columns: Callable[[str], object]) -> list:
    """Test cases from a text table, one a line: white-space separated cells, each read by
    its column's function (a cell "-" is None), then the case's id."""
    cases = []
    for line in text.strip().splitlines():
        *cells, case_id = line.split()
        assert len(cells) == len(columns), line
        values = [None if cell == "-" else read(cell)
                  for read, cell in zip(columns, cells, strict=True)]
        cases.append(pytest.param(*values, id=case_id))
    return cases


def yes(cell: str) -> bool:
    """A table cell that says yes or no."""
    return {"yes": True, "no": False}[cell]


def ratio(cell: str) -> float:
    """A table cell that is a number or a fraction: 0.05, 1/19."""
    return float(Fraction(cell))


def named(expected, cases: dict) -> list:
    """Test cases (value, expected), one for each value of ``cases``, with its name as id."""
    return [pytest.param(value, expected, id=name) for name, value in cases.items()]


def upload_summary(html: str, name: str) -> list[tuple[str, str]]:
    """The figures of an upload page's summary: (the value its link filters ``name`` by, the
    count), in the page's order."""
    summary = re.search(r'<nav class="upload-summary".*?</nav>', html, re.S).group(0)
    return re.findall(rf'<a href="\?{name}=(\w+)"><span class="badge [sv]-\w+">\w+</span> '
                      r"<strong>(\d+)</strong> \w+</a>", summary)


def assert_row_refused(suite, rows: list, field: str, code: str, says: str) -> None:
    """A report of ``rows`` refused whole for its row 1's ``field`` alone (``code``, a
    message holding ``says``), and nothing stored."""
    with pytest.raises(UploadInvalid) as refused:
        parse_report(body(rows), {})
    [problem] = refused.value.problems
    assert (problem.row, problem.field, problem.code) == (1, field, code)
    assert says in problem.message
    with pytest.raises(UploadInvalid):
        report_ingest(suite=suite, body=body(rows), actor="ci")
    assert not Report.objects.exists() and not Measurement.objects.exists()


def table_sizes() -> dict[str, int]:
    """The row count of every table the board has, read in one query: 'nothing stored'
    compares two of these."""
    from django.apps import apps
    from django.db import connection

    models = apps.get_models()
    quote = connection.ops.quote_name
    counts = ", ".join(f"(SELECT COUNT(*) FROM {quote(model._meta.db_table)})"  # noqa: S608 (names, quoted)
                       for model in models)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {counts}")
        row = cursor.fetchone()
    return {model._meta.label: count for model, count in zip(models, row, strict=True)}
