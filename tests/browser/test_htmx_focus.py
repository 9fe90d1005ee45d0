"""Every htmx action, as a keyboard user meets it: the focus lands on what changed (or stays on
the control that was used), the result is said in the page's live region, the page's counts are
current, and the page is not loaded again."""

from __future__ import annotations

import re
from datetime import date, timedelta

import pytest
from playwright.sync_api import expect

from junit.ingest import junit_ingest
from runs.ingest import report_ingest
from tests.conftest import PASSWORD
from tests.helpers import body, measurement, quarantined
from tests.junit_files import junit_xml

from .board import DESK, PHONE

pytestmark = pytest.mark.browser

MARKER = "window.__sameDocument"
RENEWED = "tests/test_pay.py::test_settles_in_time"
READY = "tests/test_pay.py::test_refunds_once"
CLEARED = "tests/test_pay.py::test_retries_the_bank"
FLAKY = "tests/test_a.py::test_flakes"
ACTIVE = "a[href$='state=active'] .figure"


def _same_document(page):
    page.evaluate(f"{MARKER} = true")


def _still_the_same_document(page):
    assert page.evaluate(MARKER) is True, "the page was loaded again"


def _focused(page) -> str:
    """The focused element, as ``tag#id`` and its text: what a failure message shows."""
    return page.evaluate(
        "(() => { const e = document.activeElement; const text = (e.innerText || '').trim();"
        " return `${e.tagName.toLowerCase()}#${e.id} ${text.slice(0, 60)}`; })()"
    )


def _typed(day: date) -> str:
    """The keys that type a day into a date input, as an en-US Chromium lays it out."""
    return day.strftime("%m%d%Y")


def _ready(suite, nodeid: str, k: int) -> None:
    """K clean measurements of the node after its entry was made: the entry is ready."""
    for i in range(k):  # one commit each: the same upload twice is stored once
        report_ingest(suite=suite, body=body([measurement(nodeid)]), actor="ci",
                      query={"commit": f"fixed-{i}"})


def test_the_entry_page_focuses_and_announces_each_result(board, suite, owner, today):
    entries = quarantined(suite, today, {RENEWED: 3, READY: 20})
    _ready(suite, READY, suite.clear_after_clean_measurements)
    page = board.page
    board.sign_in(owner.username, PASSWORD)

    board.goto(f"/suites/{suite.slug}/ledger/{entries[RENEWED].pk}/")
    _same_document(page)
    page.get_by_text("Renew on new evidence").click()
    form = page.locator("#entry-body form[hx-post$='/renew/']")
    form.get_by_label("New evidence").fill("https://ci.example.com/runs/77")
    board.submit(form.get_by_role("button", name="Renew"), in_place=True)
    notice = page.locator("#entry-body .notice")
    expect(notice).to_contain_text("Renewed until")
    expect(notice).to_be_focused()
    expect(page.locator("#live")).to_contain_text("Renewed until")
    _still_the_same_document(page)

    board.goto(f"/suites/{suite.slug}/ledger/{entries[READY].pk}/")
    _same_document(page)
    board.submit(page.get_by_role("button", name="Clear as fixed"), in_place=True)
    expect(notice).to_contain_text("Cleared as fixed")
    expect(notice).to_be_focused()
    expect(page.locator("#live")).to_contain_text("Cleared as fixed")
    _still_the_same_document(page)
    board.finish("htmx-entry-page")


def test_an_inline_clear_focuses_the_row_and_updates_the_tiles(board, suite, owner, today):
    entries = quarantined(suite, today, {CLEARED: 20, RENEWED: 20})
    page = board.page
    board.sign_in(owner.username, PASSWORD)
    board.goto(f"/suites/{suite.slug}/ledger/")
    tiles = page.get_by_role("region", name="Ledger at a glance")
    expect(tiles.locator(ACTIVE)).to_have_text("2")
    expect(page.locator("#result-count")).to_contain_text("2 entries")
    _same_document(page)

    page.get_by_role("link", name=f"Clear {CLEARED}").click()
    form = page.locator(f"#entry-{entries[CLEARED].pk}.editing form")
    reason = form.get_by_label("Why is it cleared?")
    expect(reason).to_be_focused()
    reason.fill("Fixed the race.")
    board.submit(form.get_by_role("button", name="Clear the entry"), in_place=True)
    row = page.locator(f"#entry-{entries[CLEARED].pk}")
    expect(row).to_be_focused()
    expect(page.locator("#live")).to_contain_text("Cleared")
    expect(tiles.locator(ACTIVE)).to_have_text("1")
    _still_the_same_document(page)
    board.finish("htmx-ledger-clear")


def test_paging_keeps_the_focus_on_the_pager(board, suite, owner, today):
    suite.max_quarantined_share = 1.0
    suite.save()
    quarantined(suite, today, {f"tests/test_p.py::test_{i:02}": 20 for i in range(30)})
    page = board.page
    board.sign_in(owner.username, PASSWORD)
    board.goto(f"/suites/{suite.slug}/ledger/")
    _same_document(page)
    page.get_by_role("link", name="Next →").click()
    expect(page.locator(".pagination")).to_contain_text("Page 2 of 2")
    previous = page.get_by_role("link", name="← Previous")
    expect(previous).to_be_focused()
    _still_the_same_document(page)
    board.finish("htmx-ledger-paging")


def test_measure_on_the_flaky_page_keeps_the_focus_on_the_row(board, suite, owner):
    xml = junit_xml(("tests.test_a", "test_flakes", "failed", "timeout after 2.5s"),
                    ("tests.test_a", "test_flakes", "passed", ""))
    junit_ingest(suite=suite, body=xml, actor="ci",
                 query={"commit": "c0ffee", "branch": "main", "job": "py3.12"})
    page = board.page
    board.sign_in(owner.username, PASSWORD)
    board.goto(f"/suites/{suite.slug}/flaky/")
    _same_document(page)
    board.submit(page.get_by_role("button", name=f"Measure {FLAKY}"), in_place=True)
    unmark = page.get_by_role("button", name=f"Unmark {FLAKY}")
    expect(unmark).to_be_focused()
    expect(page.locator("#live")).not_to_be_empty()
    _still_the_same_document(page)
    board.finish("htmx-flaky-measure")


def test_switching_the_trends_range_keeps_the_focus_and_says_the_range(board, suite, lead,
                                                                      today):
    report_ingest(suite=suite, body=body([measurement("tests/test_t.py::test_t")]), actor="ci")
    page = board.page
    board.sign_in(lead.username, PASSWORD)
    board.goto(f"/suites/{suite.slug}/trends/")
    _same_document(page)
    choice = page.get_by_label("Range", exact=True)
    choice.focus()
    choice.select_option("7")
    start = (today - timedelta(days=6)).isoformat()
    expect(page.locator("#live")).to_contain_text(f"{start} to {today.isoformat()}: 7 days")
    expect(page.get_by_label("Range", exact=True)).to_be_focused()
    _still_the_same_document(page)
    board.finish("htmx-trends-range")


def test_typing_a_tier_rule_keeps_the_focus_in_the_field(board, suite, lead):
    report_ingest(suite=suite, body=body([measurement("tests/test_t.py::test_t")]), actor="ci")
    page = board.page
    board.sign_in(lead.username, PASSWORD)
    board.goto(f"/suites/{suite.slug}/settings/")
    glob = page.get_by_label("Glob")
    glob.click()
    glob.press_sequentially("tests/test_t.py::*", delay=20)
    expect(page.locator("#rule-preview")).to_contain_text("1")
    expect(glob).to_be_focused()
    board.finish("htmx-tier-rule-preview")


@pytest.mark.parametrize("viewport", [DESK, PHONE], ids=["desk", "phone"])
def test_typing_a_trends_day_applies_a_custom_range_in_place(board, suite, lead, today,
                                                              viewport):
    report_ingest(suite=suite, body=body([measurement("tests/test_t.py::test_t")]), actor="ci")
    page = board.page
    page.set_viewport_size(viewport)
    board.sign_in(lead.username, PASSWORD)
    board.goto(f"/suites/{suite.slug}/trends/")
    expect(page.locator(".range-summary")).to_contain_text(": 30 days")
    _same_document(page)
    summary, live = page.locator(".range-summary"), page.locator("#live")

    start = today - timedelta(days=10)
    first = page.get_by_label("From", exact=True)
    first.press_sequentially(_typed(start))
    said = f"{start.isoformat()} to {today.isoformat()}: 11 days"
    expect(summary).to_contain_text(said)
    expect(live).to_contain_text(said)
    expect(page.get_by_label("Range", exact=True)).to_have_value("custom")
    expect(page.get_by_label("From", exact=True)).to_be_focused()
    page.wait_for_url(re.compile(rf"[?&]range=custom&from={start.isoformat()}&"))

    # The day after today in UTC, a viewer's today east of it: shown up to today, and said.
    tomorrow = today + timedelta(days=1)
    page.get_by_label("To", exact=True).press_sequentially(_typed(tomorrow))
    cut = f"to {tomorrow.isoformat()} is after today in UTC; shown up to {today.isoformat()}."
    expect(summary).to_contain_text(cut)
    expect(live).to_contain_text(cut)
    expect(page.get_by_label("To", exact=True)).to_be_focused()
    expect(page.get_by_label("To", exact=True)).to_have_value(today.isoformat())
    _still_the_same_document(page)
    board.finish(f"htmx-trends-typed-day-{viewport['width']}")
