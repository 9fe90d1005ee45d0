"""Journey, a flip on the flaky-tests page: CI's gate rejects a patch, a retry at the same
commit passes the node that failed; an owner opens Flaky tests, on a desk and on a phone
(390 by 844), finds the node first, above a test flaky in JUnit files, with the commit and
the batch named, and follows the batch link."""

import pytest
from playwright.sync_api import expect

from junit.ingest import junit_ingest
from ledger.tokens import token_create
from tests.conftest import PASSWORD
from tests.junit_files import junit_xml

from .board import PHONE, call_api

pytestmark = pytest.mark.browser

FLIPPED = "tests/test_payments.py::TestRefunds::test_refund_retries_once_when_the_gateway_times_out"
JUNIT = "tests/test_ledger.py::test_settlement_rounding"


def attempt(board, token, check: str) -> dict:
    sent = call_api(board.base_url, "POST", "/suites/acme/verdicts", token=token, body={
        "patch": "pr-311", "commit": "9f1e2d3c4b5a", "records": [
            {"node": FLIPPED, "property_check": check, "fixture_lock": "match",
             "flake_status": "stable"}]})
    assert sent.status == 201, sent.json
    return sent.json


@pytest.mark.parametrize("viewport", [None, PHONE], ids=["desk", "phone"])
def test_a_flip_between_attempts_is_listed_first_with_its_batch(board, suite, owner, viewport):
    _, write = token_create(suite=suite, scope="write", actor="@lea", name="ci")
    attempt(board, write, "fail")
    second = attempt(board, write, "pass")
    for job in ("py3.12", "py3.13"):
        junit_ingest(suite=suite, actor="ci", query={"commit": "c0ffee", "branch": "main",
                                                     "job": job},
                     body=junit_xml(("tests.test_ledger", "test_settlement_rounding", "failed",
                                     "AssertionError: 0.30000000000000004 != 0.3"),
                                    ("tests.test_ledger", "test_settlement_rounding", "passed")))

    page = board.page
    if viewport:
        page.set_viewport_size(viewport)
    board.sign_in(owner.username, PASSWORD)
    board.goto("/suites/acme/flaky/")
    expect(page.locator("#result-count")).to_contain_text(
        "2 flaky tests in the last 30 days (1 flipped between gate attempts)")
    first = page.locator("tbody tr[id^=flaky-]").first
    expect(first).to_contain_text(FLIPPED)
    expect(first).to_contain_text("failed in attempt 1, passed in attempt 2")
    expect(page.get_by_role("columnheader", name="Flipped between gate attempts")).to_be_visible()
    expect(page.get_by_role("columnheader", name="Flaky in JUnit files")).to_be_visible()
    name = f"flaky-flip-{'phone' if viewport else 'desk'}"
    board.screenshot(name)

    board.follow(first.get_by_role("link", name=f"batch {second['id']}"))
    expect(page).to_have_url(second["url"])
    expect(page.get_by_role("region", name="1 node flipped between attempts")).to_be_visible()
    board.finish(f"{name}-batch")
