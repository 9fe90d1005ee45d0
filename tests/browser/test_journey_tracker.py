"""A lead sets the suite's GitHub tracker against a fake GitHub on 127.0.0.1, tests the
connection, quarantines a node, and after a run of sync_trackers finds the issue's link on
the entry, on a desk and on a phone (issue 54)."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from tests.conftest import PASSWORD
from tests.helpers import make_known, measurement
from tests.local_server import serving
from tests.tracker_server import FakeTracker
from tests.trackers_setup import TOKEN

from .board import ARTIFACTS, DESK, PHONE

pytestmark = pytest.mark.browser

FLAKY = "tests/test_refunds.py::test_partial_refund"
ISSUE = "https://github.com/acme/shop/issues/1"


@pytest.fixture
def github():
    fake = FakeTracker("github")
    with serving(fake.server):
        yield fake


def _fits(page, width: int) -> None:
    page.set_viewport_size({**PHONE, "width": width} if width == PHONE["width"] else DESK)
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def test_lead_sets_a_github_tracker_and_finds_the_issue_on_the_entry(
        board, suite, lead, settings, github, today):
    settings.WEBHOOKS_ALLOW_PRIVATE_IPS = True  # the fake GitHub is on 127.0.0.1
    settings.BASE_URL = board.base_url
    make_known(suite, measurement(FLAKY, fails=8), steady=40)
    page = board.page
    board.sign_in(lead.username, PASSWORD)
    section = board.settings_section(suite.slug, "tracker-section")
    expect(section).to_contain_text("No tracker")
    section.get_by_label("Tracker", exact=True).select_option(label="GitHub Issues")
    section.get_by_label("Repository or project").fill("acme/shop")
    section.get_by_label("Site", exact=True).fill(github.site)
    section.get_by_label("Token", exact=True).fill(TOKEN)
    board.submit(section.get_by_role("button", name="Save tracker"), in_place=True)
    expect(section.locator(".notice")).to_have_text("Tracker saved: GitHub Issues acme/shop.")
    expect(section.get_by_label("Token", exact=True)).to_have_value("")
    board.submit(section.get_by_role("button", name="Test the connection"), in_place=True)
    expect(section.locator(".notice")).to_have_text("Connected: found repository acme/shop.")
    assert TOKEN not in page.content()

    board.goto(f"/suites/{suite.slug}/ledger/new/?node={FLAKY}")
    page.get_by_label("Owner", exact=True).fill("@finley")
    page.get_by_label("Expires on", exact=True).fill((today + timedelta(days=14)).isoformat())
    page.get_by_label("Evidence", exact=True).fill("ci/run-88")
    board.submit(page.get_by_role("button", name="Quarantine", exact=True))
    expect(page.get_by_role("heading", level=1)).to_have_text(FLAKY)
    entry_url = page.url

    call_command("sync_trackers", stdout=io.StringIO())
    [opened] = github.requests("POST")
    assert opened.body["title"] == f"Flaky test: {FLAKY}"
    for width in (DESK["width"], PHONE["width"]):
        _fits(page, width)
        board.goto(entry_url.removeprefix(board.base_url))
        link = page.get_by_role("link", name=ISSUE.removeprefix("https://"))
        expect(link).to_be_visible()
        expect(link).to_have_attribute("href", ISSUE)
        _fits(page, width)
        board.screenshot(f"journey-tracker-{width}")

    ARTIFACTS.mkdir(exist_ok=True)
    for width in (PHONE["width"], DESK["width"]):
        _fits(page, width)
        board.goto(f"/suites/{suite.slug}/settings/#tracker")
        log = page.get_by_role("region", name="Tracker deliveries").locator("tbody tr")
        expect(log).to_contain_text(["Open an issue"])
        _fits(page, width)
        page.locator("#tracker").screenshot(path=ARTIFACTS / f"tracker-settings-{width}.png")
    board.finish("journey-tracker")
