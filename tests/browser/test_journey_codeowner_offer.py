"""An owner types a node id CI has not named yet into the new entry form: the owner field
follows with the node's code owner, saying which CODEOWNERS line named it, without a page
load; once the owner types an owner of their own, a new node id leaves it alone."""

import pytest
from playwright.sync_api import expect

from ledger.codeowners import codeowners_set
from tests.browser.board import ABORTED
from tests.conftest import PASSWORD

pytestmark = pytest.mark.browser

NEW = "tests/payments/test_new.py::test_refund"
OTHER = "tests/ui/test_cart.py::test_add"
MARKER = "window.__sameDocument"


def test_the_owner_follows_the_typed_node_id_until_someone_types_one(board, suite, owner):
    codeowners_set(suite=suite, text="tests/payments/ @org/payments\n", actor="@lea")
    page = board.page
    board.sign_in(owner.username, PASSWORD)
    board.goto(f"/suites/{suite.slug}/ledger/new/")
    page.evaluate(f"{MARKER} = true")
    node, owner_field = page.get_by_label("Node id", exact=True), page.get_by_label("Owner")
    expect(owner_field).to_have_value("@finley")
    expect(owner_field).to_have_accessible_description(
        "A @handle such as @finley, or an e-mail address. "
        "Offered: you, the signed-in user, as no node id is given yet.")

    node.fill(NEW)
    expect(owner_field).to_have_value("@org/payments")
    expect(owner_field).to_have_accessible_description(
        "A @handle such as @finley, or an e-mail address. "
        "Offered from CODEOWNERS, line 1: tests/payments/ @org/payments.")
    node.fill(OTHER)
    expect(owner_field).to_have_value("@finley")
    expect(page.locator("#owner-offer")).to_contain_text(
        "CODEOWNERS names no owner for this path")

    owner_field.fill("@sam")
    with page.expect_response(lambda r: "/ledger/new/?" in r.url) as asked:
        node.fill(NEW)
    assert asked.value.status == 204
    expect(owner_field).to_have_value("@sam")
    assert page.evaluate(MARKER) is True, "the page was loaded again"
    board.finish("journey-codeowner-offer")


def test_a_form_sent_while_the_offer_is_on_its_way_is_no_failure(board, suite, owner):
    """The owner offer comes 400 ms after the last keystroke; a form sent while it is on
    its way leaves the page, and the browser cancels the fetch: no answer of the board's
    failed, and the journey says none did (the cancelled fetch was the refusals journey's
    flake)."""
    codeowners_set(suite=suite, text="tests/payments/ @org/payments\n", actor="@lea")
    page = board.page
    board.sign_in(owner.username, PASSWORD)
    board.goto(f"/suites/{suite.slug}/ledger/new/")
    held, cancelled = [], []
    # The offer's answer never comes before the form is sent.
    page.route("**/ledger/new/?*", lambda route: held.append(route))
    page.on("requestfailed", lambda request: cancelled.append(request.failure))
    page.get_by_label("Evidence", exact=True).fill("ci/run-7")
    with page.expect_request(lambda r: "/ledger/new/?" in r.url):
        page.get_by_label("Node id", exact=True).fill(NEW)
    board.submit(page.get_by_role("button", name="Quarantine", exact=True))
    assert len(held) == 1 and cancelled == [ABORTED]
    board.finish("journey-offer-cancelled")
