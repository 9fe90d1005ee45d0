"""Journey 3, the refusals a user sees: quarantining a tier-0 node shows, on the node field,
the error that names the tier rule; an expiry beyond the suite's maximum is refused by
Chromium before it is sent, and by the board when a browser lets it through. Nothing is
stored either way."""

import re
from datetime import timedelta

import pytest
from playwright.sync_api import expect

from ledger.models import AuditEvent, QuarantineEntry
from ledger.tiers import tier_rule_add
from tests.conftest import PASSWORD
from tests.helpers import make_known, measurement

pytestmark = pytest.mark.browser

RULE = "tests/test_properties.py::*"
PROPERTY = "tests/test_properties.py::test_roundtrip"
FLAKY = "tests/test_export.py::test_streams_large_files"


@pytest.fixture
def known_nodes(suite):
    make_known(suite, measurement(PROPERTY, fails=3), measurement(FLAKY, fails=9))
    tier_rule_add(suite=suite, glob=RULE, tier=0, actor="@lea")


def _field(page, label):
    """The form field (label, input, help and errors) around the input with this label."""
    return page.locator(".field").filter(has=page.get_by_label(label, exact=True))


def _nothing_stored():
    assert QuarantineEntry.objects.count() == 0
    assert not AuditEvent.objects.filter(entry__isnull=False).exists()


def test_refusals_are_shown_on_their_fields_and_store_nothing(
    board, suite, owner, known_nodes, today
):
    page = board.page
    posts = []
    page.on("request", lambda request: posts.append(request) if request.method == "POST" else None)
    board.sign_in(owner.username, PASSWORD)
    board.goto(f"/suites/{suite.slug}/ledger/")
    board.follow(page.get_by_role("link", name="Quarantine a node"))
    expect(page.get_by_role("heading", name="Quarantine a node")).to_be_visible()

    page.get_by_label("Node id").fill(PROPERTY)
    page.get_by_label("Evidence", exact=True).fill("ci/run-7")
    board.submit(page.get_by_role("button", name="Quarantine", exact=True))
    node = page.get_by_label("Node id")
    expect(node).to_have_attribute("aria-invalid", "true")
    expect(node).to_have_accessible_description(re.compile(re.escape(
        f"{PROPERTY} cannot be quarantined: the tier rule “{RULE}” makes it tier 0"
    )))
    expect(_field(page, "Node id")).to_have_class("field invalid")
    expect(node).to_have_value(PROPERTY)
    expect(page.locator(".field.invalid")).to_have_count(1)
    _nothing_stored()

    latest = today + timedelta(days=suite.max_quarantine_days)
    too_late = latest + timedelta(days=1)
    page.get_by_label("Node id").fill(FLAKY)
    expires = page.get_by_label("Expires on")
    expect(expires).to_have_attribute("max", latest.isoformat())
    expires.fill(too_late.isoformat())
    sent = len(posts)
    page.get_by_role("button", name="Quarantine", exact=True).click()
    assert expires.evaluate("input => input.validity.rangeOverflow") is True
    assert expires.evaluate("input => input.validationMessage") != ""
    assert len(posts) == sent, "Chromium sent a date beyond the input's max"
    _nothing_stored()

    # A browser that does not check dates sends it: the board refuses it in its own words.
    page.locator("form.card").evaluate("form => { form.noValidate = true; }")
    board.submit(page.get_by_role("button", name="Quarantine", exact=True))
    expect(expires).to_have_attribute("aria-invalid", "true")
    expect(expires).to_have_accessible_description(re.compile(re.escape(
        f"The expiry may be at most {suite.max_quarantine_days} days ahead "
        f"(no later than {latest.isoformat()})."
    )))
    expect(_field(page, "Expires on")).to_have_class("field invalid")
    expect(page.locator(".field.invalid")).to_have_count(1)
    expect(page.get_by_label("Node id")).to_have_value(FLAKY)
    board.finish("journey-3-refusals")
    _nothing_stored()
