"""The ledger and the audit trail as CSV: filtered as the page shows them (every page, not
one), every text cell a spreadsheet would run as a formula made inert."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.urls import reverse

import web.csv
from ledger.quarantine import quarantine_clear, quarantine_create
from ledger.settings_services import policy_update
from web.csv import neutralised

LEDGER_HEADER = ["node", "state", "owner", "expires", "age_days", "renewals", "evidence",
                 "created_at", "created_by", "note"]

# A first character a spreadsheet runs, and text it leaves alone.
NEUTRALISED = [
    ("=1+1", "'=1+1"),
    ("+1", "'+1"),
    ("-1", "'-1"),
    ("@SUM(A1)", "'@SUM(A1)"),
    ("\tx", "'\tx"),
    ("\rx", "'\rx"),
    # Whitespace a spreadsheet skips before the sign.
    (" =1+1", "' =1+1"),
    ("  +1", "'  +1"),
    ("\t-1", "'\t-1"),
    (" \t@x", "' \t@x"),
    ("\n=1", "'\n=1"),
    ("\u3000=1", "'\u3000=1"),
    # The full-width signs, which some locales evaluate, and after whitespace too.
    ("\uff1dHYPERLINK(\"http://x\")", "'\uff1dHYPERLINK(\"http://x\")"),
    ("\uff0b1", "'\uff0b1"),
    ("\uff0d1", "'\uff0d1"),
    ("\uff20SUM(A1)", "'\uff20SUM(A1)"),
    (" \uff1d1", "' \uff1d1"),
    ("tests/a.py::test_x", "tests/a.py::test_x"),
    ("a=b", "a=b"),
    (" b=1", " b=1"),
    ("a\uff1db", "a\uff1db"),
    ("   ", "   "),
    ("", ""),
]


@pytest.mark.parametrize(("cell", "safe"), NEUTRALISED, ids=repr)
def test_a_cell_a_spreadsheet_would_run_is_neutralised(cell, safe):
    assert neutralised(cell) == safe


@pytest.mark.parametrize("value", [-3, 0, 2.5, None])
def test_numbers_are_written_as_they_are(value):
    assert neutralised(value) == value


def rows_of(response) -> list[list[str]]:
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="')
    assert response["Content-Disposition"].endswith('.csv"')
    return list(csv.reader(io.StringIO(response.getvalue().decode())))


def quarantined(suite, today, count):
    """``count`` entries (an import skips the share cap), owners and expiries mixed."""
    return [
        quarantine_create(suite=suite, nodeid=f"tests/test_{i:02}.py::test_flaky",
                          owner="@finley" if i % 3 else "@ana",
                          expires=today + timedelta(days=1 + i % 20), evidence=f"ci/run-{i}",
                          actor="@lea", today=today, imported=True)
        for i in range(count)
    ]


def page_nodes(client, url, query) -> list[str]:
    """The node of every row the ledger page lists with ``query``, page after page."""
    nodes, number = [], 1
    while True:
        response = client.get(url, {**query, "page": number})
        nodes += [row.entry.node.nodeid for row in response.context["rows"]]
        if not response.context["page"].has_next():
            return nodes
        number += 1


@pytest.mark.parametrize("query", [
    {}, {"owner": "@finley", "sort": "-expires"}, {"state": "expiring"}, {"q": "test_1"},
])
def test_the_ledger_csv_holds_the_rows_the_page_shows_on_every_page(
        client_for, suite, owner, today, query):
    quarantined(suite, today, 40)
    client = client_for(owner)
    shown = page_nodes(client, reverse("ledger", args=[suite.slug]), query)

    rows = rows_of(client.get(reverse("ledger_csv", args=[suite.slug]), query))

    assert rows[0] == LEDGER_HEADER
    assert [row[0] for row in rows[1:]] == shown
    assert shown


def test_a_ledger_row_says_what_the_page_says(client_for, suite, owner, today):
    quarantine_create(suite=suite, nodeid="=cmd|' /C calc'!A0", owner="@finley",
                      expires=today + timedelta(days=3), evidence="ci/run-1", actor="@lea",
                      today=today, imported=True, note="-2 flakes a day")
    rows = rows_of(client_for(owner).get(reverse("ledger_csv", args=[suite.slug])))

    node, state, who, expires, age, renewals, evidence, created, by, note = rows[1]
    assert node == "'=cmd|' /C calc'!A0"
    # An @handle is neutralised too: a spreadsheet reads a leading @ as a formula.
    assert (state, who, expires, age, renewals) == (
        "expiring", "'@finley", (today + timedelta(days=3)).isoformat(), "0", "0")
    assert (evidence, by, note) == ("ci/run-1", "'@lea", "'-2 flakes a day")
    assert created.startswith(today.isoformat())


def test_the_ledger_page_links_its_csv_with_its_filters(client_for, suite, owner, today):
    quarantined(suite, today, 30)
    page = client_for(owner).get(reverse("ledger", args=[suite.slug]),
                                 {"owner": "@finley", "page": "2"}).content.decode()
    assert f'href="{reverse("ledger_csv", args=[suite.slug])}?owner=%40finley"' in page


def test_the_audit_csv_is_the_suites_whole_trail_oldest_first(client_for, suite, lead, today):
    entry, *_ = quarantined(suite, today, 2)
    quarantine_clear(entry=entry, note="=HYPERLINK(\"http://evil\")", actor="@lea")
    policy_update(suite=suite, actor="@lea", note="+ stricter", max_upper_rate=0.03,
                  min_runs=suite.min_runs, max_quarantined_share=suite.max_quarantined_share,
                  max_quarantine_days=suite.max_quarantine_days)
    client = client_for(lead)
    settings_page = client.get(reverse("settings", args=[suite.slug])).content.decode()
    assert reverse("audit_csv", args=[suite.slug]) in settings_page

    rows = rows_of(client.get(reverse("audit_csv", args=[suite.slug])))

    assert rows[0] == ["at", "actor", "action", "node", "before", "after", "note"]
    events = rows[1:]
    assert [(e[2], e[3]) for e in events] == [
        ("import", entry.node.nodeid), ("import", "tests/test_01.py::test_flaky"),
        ("clear", entry.node.nodeid), ("settings", "")]
    assert [e[0] for e in events] == sorted(e[0] for e in events)
    assert events[2][6] == "'=HYPERLINK(\"http://evil\")"
    assert events[3][6] == "'+ stricter"
    assert '"max_upper_rate": 0.03' in events[3][5]


def test_every_csv_download_writes_its_cells_through_the_guard(monkeypatch, client_for, suite,
                                                              lead, today):
    quarantined(suite, today, 1)
    monkeypatch.setattr(web.csv, "neutralised", lambda cell: "guarded")
    client = client_for(lead)
    week = {"from": (today - timedelta(days=6)).isoformat(), "to": today.isoformat()}
    downloads = [(reverse("ledger_csv", args=[suite.slug]), {}),
                 (reverse("audit_csv", args=[suite.slug]), {}),
                 (reverse("trends_csv", args=[suite.slug, "share"]), week)]
    for url, query in downloads:
        body = rows_of(client.get(url, query))[1:]
        assert body and {cell for row in body for cell in row} == {"guarded"}, url


def test_no_module_writes_a_csv_but_the_one_with_the_guard():
    root = Path(__file__).resolve().parent.parent
    writers = sorted(
        str(path.relative_to(root))
        for package in ("flakeboard", "web", "ledger", "runs", "junit", "notify", "board")
        for path in (root / package).rglob("*.py")
        if re.search(r"csv\.(writer|DictWriter)|text/csv", path.read_text()))
    assert writers == ["web/csv.py"]
