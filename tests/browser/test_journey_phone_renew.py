"""Journey 6, an owner renews in place on a phone (390 by 844): the ledger's rows are cards, the
opened form fits the screen with the focus in its first field, and after the save the row,
the tiles and the count line are current without a page load, the focus on the changed row."""

from datetime import timedelta

import pytest
from playwright.sync_api import expect

from tests.conftest import PASSWORD
from tests.helpers import quarantined

from .board import PHONE

pytestmark = pytest.mark.browser

EXPIRING = "tests/test_cache.py::test_evicts_under_pressure_with_a_rather_long_name"
STEADY = "tests/test_search.py::test_ranks_stably"
NEW_EVIDENCE = "https://ci.example.com/runs/4242"
MARKER = "window.__sameDocument"


def _within_viewport(page, locator):
    box = locator.bounding_box()
    assert box is not None, "not rendered"
    assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], box
    assert box["y"] >= 0 and box["y"] + box["height"] <= PHONE["height"], box


def test_owner_renews_in_place_on_a_phone(board, suite, owner, today):
    entry = quarantined(suite, today, {EXPIRING: 3, STEADY: 20})[EXPIRING]
    page = board.page
    page.set_viewport_size(PHONE)
    board.sign_in(owner.username, PASSWORD)
    board.goto(f"/suites/{suite.slug}/ledger/")
    tiles = page.get_by_role("region", name="Ledger at a glance")
    expect(tiles.locator("a[href$='state=expiring'] .figure")).to_have_text("1")
    expect(tiles.locator("a[href$='state=active'] .figure")).to_have_text("1")
    expect(page.locator("#result-count")).to_contain_text("2 entries")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]

    page.evaluate(f"{MARKER} = true")
    page.get_by_role("link", name=f"Renew {EXPIRING}").click()
    form = page.locator(f"#entry-{entry.pk}.editing form")
    expires = form.get_by_label("New expiry")
    expect(expires).to_be_focused()
    renew = form.get_by_role("button", name="Renew")
    for field in (expires, renew):
        field.scroll_into_view_if_needed()
        expect(field).to_be_in_viewport()
        _within_viewport(page, field)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    board.screenshot("phone-renew-open")

    new_expiry = (today + timedelta(days=25)).isoformat()
    expires.fill(new_expiry)
    form.get_by_label("New evidence").fill(NEW_EVIDENCE)
    board.submit(renew, in_place=True)

    row = page.locator(f"#entry-{entry.pk}")
    expect(row).to_contain_text("Renewed until")
    expect(row.locator("time").first).to_have_attribute("datetime", new_expiry)
    expect(row).to_be_focused()
    expect(tiles.locator("a[href$='state=expiring'] .figure")).to_have_text("0")
    expect(tiles.locator("a[href$='state=active'] .figure")).to_have_text("2")
    expect(page.locator("#result-count")).to_contain_text("2 entries")
    expect(row.get_by_role("status")).to_contain_text(f"Renewed until {new_expiry}")
    assert page.evaluate(MARKER) is True, "the page was loaded again"
    board.screenshot("phone-renew-saved")
    board.finish("journey-phone-renew")
