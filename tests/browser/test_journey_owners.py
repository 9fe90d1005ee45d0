"""Journeys of the owners' loop (issue 20): a lead follows a figure of the owners view into
the ledger and finds exactly the entries it counted; a lead sets the suite's webhook, sees
its signing secret once, sends a test to a receiver and finds it in the delivery log, each
step answered in place with the focus on what changed."""

import hashlib
import hmac
import json

import pytest
from playwright.sync_api import expect

from ledger.models import QuarantineEntry
from notify.models import Webhook
from tests.conftest import PASSWORD
from tests.helpers import quarantined
from tests.test_notify_webhooks import receiver  # noqa: F401 (a fixture)

from .conftest import OWNER_LEDGER

pytestmark = pytest.mark.browser

MARKER = "window.__sameDocument"
PRIYAS = "tests/test_refunds.py::test_partial_refund"


@pytest.fixture
def entries(suite, today):
    """@finley's three entries (two expiring within 7 days) and @priya's one."""
    made = quarantined(suite, today, {**OWNER_LEDGER, PRIYAS: 2})
    QuarantineEntry.objects.filter(pk=made[PRIYAS].pk).update(owner="@priya")
    return made


def _figure(page, owner: str, column: str):
    """The link of one owner's figure in the owners table, by the column's heading."""
    headings = page.locator("table.owners thead th").all_inner_texts()
    row = page.locator("table.owners tbody tr").filter(
        has=page.get_by_role("rowheader", name=owner, exact=True))
    return row.locator("th, td").nth(headings.index(column)).get_by_role("link")


def _follow_figure(board, owner: str, column: str, query: str):
    """Follow the figure into the ledger: it lists exactly that many entries, all the owner's."""
    page = board.page
    link = _figure(page, owner, column)
    counted = int(link.inner_text())
    assert counted > 0
    board.follow(link)
    assert query in page.url, page.url
    rows = page.locator("#results tbody tr")
    expect(rows).to_have_count(counted)
    for row in rows.all():
        expect(row).to_contain_text(owner)
    expect(page.locator("#result-count")).to_contain_text(
        f"{counted} entr{'y' if counted == 1 else 'ies'}")
    return counted


def test_lead_follows_an_owners_figure_into_the_ledger(board, suite, lead, entries):
    page = board.page
    board.sign_in(lead.username, PASSWORD)
    board.goto(f"/suites/{suite.slug}/")
    board.nav("Owners")
    expect(page.get_by_role("heading", level=1)).to_have_text("Owners")
    owners = page.locator("table.owners tbody th[scope=row]")
    expect(owners).to_have_text(["@finley", "@priya"])  # by debt: two expiring before one
    assert _follow_figure(board, "@finley", "Expiring", "state=expiring") == 2
    page.go_back()
    board.settle()
    assert _follow_figure(board, "@finley", "Open", "owner=%40finley") == 3
    page.go_back()
    board.settle()
    assert _follow_figure(board, "@priya", "Open", "owner=%40priya") == 1
    board.finish("journey-owners")


def test_lead_sets_a_webhook_and_sends_a_test(
    board, suite, lead, settings, receiver  # noqa: F811
):
    settings.WEBHOOKS_ALLOW_PRIVATE_IPS = True  # the receiver is on 127.0.0.1
    page = board.page
    board.sign_in(lead.username, PASSWORD)
    section = board.settings_section(suite.slug, "webhook-section")
    expect(section).to_contain_text("No webhook")
    page.evaluate(f"{MARKER} = true")
    navigations = len(board.navigations)

    section.get_by_label("URL").fill(receiver.url)
    section.get_by_label("Format").select_option(label="Generic JSON")
    board.submit(section.get_by_role("button", name="Save webhook"), in_place=True)
    secret = Webhook.objects.get(suite=suite).secret
    shown = page.locator(".token-once")
    expect(shown).to_be_focused()
    expect(shown.locator("#new-secret")).to_have_text(secret)
    expect(section).to_contain_text(f"Posting to {receiver.url} (Generic JSON)")

    board.submit(section.get_by_role("button", name="Send test"), in_place=True)
    notice = section.locator(".notice")
    expect(notice).to_have_text("Test delivery sent: HTTP 200.")
    expect(notice).to_be_focused()
    expect(page.locator("#live")).to_have_text("Test delivery sent: HTTP 200.")
    expect(page.locator("#new-secret")).to_have_count(0)
    log = section.get_by_role("region", name="Webhook deliveries").locator("tbody tr")
    expect(log).to_have_count(1)
    for text in ("(test)", "Sent", "200"):
        expect(log).to_contain_text(text)
    assert page.evaluate(MARKER) is True and board.navigations[navigations:] == []

    [(_, headers, raw)] = receiver.requests
    assert json.loads(raw)["test"] is True
    expected = hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    assert headers["X-Flakeboard-Signature"] == f"sha256={expected}"

    page.reload()
    board.settle()
    expect(section).to_contain_text(f"Posting to {receiver.url}")
    expect(page.locator("#new-secret")).to_have_count(0)
    assert secret not in page.content()
    board.finish("journey-webhook")
