"""Journey 2, an owner renews and clears in place: on the ledger filtered to "expiring", one
entry is renewed on new evidence and another cleared with a note, each row updated by htmx
without a page load; each entry's page then shows its history."""

from datetime import timedelta

import pytest
from playwright.sync_api import expect

from ledger.models import AuditEvent, QuarantineEntry
from tests.conftest import PASSWORD

from .conftest import EXPIRING

pytestmark = pytest.mark.browser

RENEWED, CLEARED = EXPIRING
NEW_EVIDENCE = "https://ci.example.com/runs/4242"
NOTE = "Fixed the drain race in review 812."
MARKER = "window.__sameDocument"


def _filter_state(board, label, value):
    board.page.get_by_label("State").select_option(label=label)
    board.page.wait_for_url(f"**state={value}**")
    board.settle()


def _still_the_same_document(board, navigations_before):
    assert board.page.evaluate(MARKER) is True, "the page was loaded again"
    assert board.navigations[navigations_before:] == [], "the main frame navigated"


def _expect_history(page, node, change, *shown):
    """The entry page of ``node``: its creation, then one ``change`` whose row shows ``shown``."""
    expect(page.get_by_role("heading", level=1)).to_have_text(node)
    history = page.get_by_role("region", name="History").get_by_role("row")
    expect(history).to_have_count(3)
    expect(history.nth(1)).to_contain_text("Quarantined")
    for text in (change, *shown):
        expect(history.nth(2)).to_contain_text(text)


def test_owner_renews_and_clears_entries_in_place(board, suite, owner, owner_ledger, today):
    renewed, cleared = owner_ledger[RENEWED], owner_ledger[CLEARED]
    page = board.page
    board.sign_in(owner.username, PASSWORD)
    board.goto(f"/suites/{suite.slug}/ledger/")
    _filter_state(board, "Expiring", "expiring")
    rows = page.locator("#results tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text(RENEWED)
    expect(rows.nth(1)).to_contain_text(CLEARED)

    page.evaluate(f"{MARKER} = true")
    navigations = len(board.navigations)

    row = page.locator(f"#entry-{renewed.pk}")
    row.get_by_role("link", name="Renew").click()
    form = page.locator(f"#entry-{renewed.pk}.editing")
    expect(form.get_by_label("New expiry")).to_have_value((today + timedelta(days=30)).isoformat())
    form.get_by_label("New evidence").fill(NEW_EVIDENCE)
    form.get_by_label("Note").fill("Still flaky under load; fix in review.")
    board.submit(form.get_by_role("button", name="Renew"), in_place=True)
    expect(form).to_have_count(0)
    _still_the_same_document(board, navigations)
    updated = page.locator(f"#entry-{renewed.pk}:not(.editing)")
    expect(updated.get_by_role("status")).to_contain_text(
        f"Renewed until {(today + timedelta(days=30)).isoformat()}"
    )
    expect(updated).to_contain_text("Active")
    expect(updated.get_by_role("link", name=NEW_EVIDENCE)).to_have_attribute("href", NEW_EVIDENCE)
    expect(updated.locator("td.num")).to_have_text("1")

    page.locator(f"#entry-{cleared.pk}").get_by_role("link", name="Clear").click()
    form = page.locator(f"#entry-{cleared.pk}.editing")
    form.get_by_label("Why is it cleared?").fill(NOTE)
    board.submit(form.get_by_role("button", name="Clear the entry"), in_place=True)
    expect(form).to_have_count(0)
    _still_the_same_document(board, navigations)
    gone = page.locator(f"#entry-{cleared.pk}:not(.editing)")
    expect(gone.get_by_role("status")).to_contain_text("Cleared: the entry has left the ledger")
    expect(gone).to_contain_text("Cleared")

    _filter_state(board, "All open", "open")
    expect(page.locator(f"#entry-{cleared.pk}")).to_have_count(0)
    expect(page.locator("#results tbody tr")).to_have_count(2)

    board.follow(page.locator(f"#entry-{renewed.pk}").get_by_role("link", name=RENEWED, exact=True))
    _expect_history(page, RENEWED, "Renewed", NEW_EVIDENCE, "ci/run-100")

    board.nav("Ledger")
    _filter_state(board, "Cleared", "cleared")
    board.follow(page.locator(f"#entry-{cleared.pk}").get_by_role("link", name="History"))
    _expect_history(page, CLEARED, "Cleared", NOTE)
    board.finish("journey-2-renew-clear")

    events = AuditEvent.objects.order_by("pk")
    assert list(events.filter(entry=renewed).values_list("action", "actor")) == [
        ("create", "@finley"), ("renew", "@finley")]
    assert list(events.filter(entry=cleared).values_list("action", "note")) == [
        ("create", ""), ("clear", NOTE)]
    renewed, cleared = (QuarantineEntry.objects.get(pk=e.pk) for e in (renewed, cleared))
    assert (renewed.evidence, renewed.renewals, renewed.cleared_at) == (NEW_EVIDENCE, 1, None)
    assert cleared.cleared_at is not None
