"""Journey, a retry at the same commit: CI's gate rejects a patch, CI retries it and a
flaky node passes; the board still rejects, and a viewer follows the second batch's page to
the first attempt, on a desk and on a phone (390 by 844), and sees the flip named. From the
first attempt's "Patch" the viewer opens the patch's page (its commit, both attempts in
order, the flip), then the trends, where the retry after the REJECT and the flip are
counted, each chart with its numbers."""

import pytest
from playwright.sync_api import expect

from ledger.tokens import token_create
from tests.conftest import PASSWORD

from .board import PHONE, call_api

pytestmark = pytest.mark.browser

FLAKY = "tests/test_payments.py::test_refund_retries_once"
STEADY = [f"tests/test_payments.py::test_steady_{i}" for i in range(12)]
PATCH, COMMIT = "pr-311", "9f1e2d3"


def attempt(board, token, flaky: str, run: int) -> dict:
    records = [{"node": node, "property_check": "pass", "fixture_lock": "match",
                "flake_status": "stable"} for node in STEADY]
    records.append({"node": FLAKY, "property_check": flaky, "fixture_lock": "match",
                    "flake_status": "stable"})
    sent = call_api(board.base_url, "POST", "/suites/acme/verdicts", token=token,
                    body={"records": records, "patch": PATCH, "commit": COMMIT,
                          "evidence": f"ci/run-{run}"})
    assert sent.status == 201, sent.json
    return sent.json


@pytest.mark.parametrize("viewport", [None, PHONE], ids=["desk", "phone"])
def test_a_green_retry_still_rejects_and_the_page_names_the_failed_attempt(
        board, suite, viewer, viewport):
    _, write = token_create(suite=suite, scope="write", actor="@lea", name="ci")
    first = attempt(board, write, "fail", 1)
    second = attempt(board, write, "pass", 2)
    assert (first["verdict"], second["verdict"], second["exit_code"]) == ("reject", "reject", 1)

    page = board.page
    if viewport:
        page.set_viewport_size(viewport)
    board.sign_in(viewer.username, PASSWORD)
    board.goto(f"/suites/acme/verdicts/{second['id']}/")
    expect(page.get_by_role("heading", level=1)).to_contain_text("REJECT")
    flipped = page.get_by_role("region", name="1 node flipped between attempts")
    expect(flipped).to_contain_text("A retry will not change this verdict")
    expect(flipped.get_by_role("link")).to_contain_text(FLAKY)
    row = page.get_by_role("row").filter(has_text=FLAKY)
    expect(row).to_contain_text("failed in 1")
    expect(row).to_contain_text("passed in 2")
    expect(row).to_contain_text("property_fail")
    board.screenshot(f"retry-batch-{'phone' if viewport else 'desk'}")

    board.follow(page.get_by_role("link", name="attempt 1", exact=True))
    expect(page).to_have_url(first["url"])
    expect(page.get_by_role("heading", level=1)).to_contain_text("REJECT")
    size = "phone" if viewport else "desk"

    # The patch's page: its commit, both attempts in order, the flip.
    board.follow(page.get_by_role("link", name=PATCH, exact=True))
    expect(page).to_have_url(second["patch_url"])
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Patch {PATCH}")
    commit = page.get_by_role("region", name=f"Commit {COMMIT} REJECT")
    attempts = commit.get_by_role("region", name=f"Attempts at commit {COMMIT}")
    rows = attempts.get_by_role("row")
    expect(rows).to_have_count(4)  # two heading rows, then attempt 1, attempt 2
    expect(rows.nth(2)).to_contain_text("attempt 1")
    expect(rows.nth(2)).to_contain_text("ci/run-1")
    expect(rows.nth(3)).to_contain_text("attempt 2")
    expect(rows.nth(3)).to_contain_text("REJECT")
    flips = commit.get_by_role("region", name="1 node flipped at this commit")
    expect(flips).to_contain_text("flipped in attempt 2")
    expect(flips.get_by_role("link")).to_contain_text(FLAKY)
    board.screenshot(f"retry-patch-{size}")
    board.follow(attempts.get_by_role("link", name="attempt 2", exact=True))
    expect(page).to_have_url(second["url"])

    # The trends count the retry after the REJECT and the flip, each with its numbers.
    board.nav("Trends")
    retries = page.get_by_role("region", name="Retries at one commit")
    for title in ("Attempts after a REJECT at the same commit, per day",
                  "Nodes that flipped between attempts, per day"):
        chart = retries.get_by_role("figure", name=title)
        expect(chart.locator("canvas")).to_be_visible()
        expect(chart.get_by_role("row").last.get_by_role("cell").last).to_have_text("1")
        expect(chart.get_by_role("link", name=f"CSV of {title}")).to_be_visible()
    retries.scroll_into_view_if_needed()
    board.finish(f"retry-{size}")
