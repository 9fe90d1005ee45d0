"""Journey 1, CI to owner: CI uploads a failing flake report through the real API; an owner
opens it, quarantines the failing node from its row with the prefilled form, and CI's next
ledger download holds exactly what the owner submitted."""

from datetime import timedelta

import pytest
from playwright.sync_api import expect

from flakeboard import rules
from ledger.tokens import token_create
from tests.conftest import PASSWORD

from .board import call_api

pytestmark = pytest.mark.browser

FLAKY = "tests/test_payments.py::test_refund_retries_once"
STEADY = [f"tests/test_payments.py::test_steady_{i}" for i in range(40)]


def test_ci_uploads_a_failing_report_and_the_owner_quarantines_the_node(
    board, suite, owner, today
):
    _, write = token_create(suite=suite, scope="write", actor="@lea", name="ci")
    _, read = token_create(suite=suite, scope="read", actor="@lea", name="gate")
    rows = [{"nodeid": node, "n": 200, "fails": 0, "seed_base": 9137} for node in STEADY]
    rows.append({"nodeid": FLAKY, "n": 200, "fails": 9, "seed_base": 9137})
    uploaded = call_api(
        board.base_url, "POST", f"/suites/{suite.slug}/reports", token=write, body=rows,
        query={"commit": "4be1c0de", "branch": "main", "evidence": "ci/run-88213"},
    )
    assert uploaded.status == 201, uploaded.json
    assert uploaded.json["exit_code"] == 1
    failing = [m for m in uploaded.json["measurements"] if m["status"] == "FAIL"]
    assert [(m["nodeid"], m["reason"]) for m in failing] == [(FLAKY, "over_budget")]

    page = board.page
    board.sign_in(owner.username, PASSWORD)
    board.nav("Reports")
    board.follow(page.get_by_role("link", name=f"#{uploaded.json['id']}", exact=True))
    expect(page).to_have_url(uploaded.json["url"])
    expect(page.get_by_role("heading", level=1)).to_contain_text("FAIL")

    row = page.get_by_role("row").filter(has_text=FLAKY)
    expect(row).to_contain_text("over_budget")
    board.follow(row.get_by_role("link", name="Quarantine"))

    expect(page.get_by_role("heading", name="Quarantine a node")).to_be_visible()
    expect(page.get_by_text("Prefilled from a failing row of a report")).to_be_visible()
    latest = today + timedelta(days=suite.max_quarantine_days)
    prefilled = {
        "Node id": FLAKY,
        "Owner": "@finley",
        "Expires on": latest.isoformat(),
        "Runs (n)": "200",
        "Failures": "9",
        "Seed base": "9137",
        "upper95 as reported": str(round(rules.upper95(9, 200), 4)),
    }
    for label, value in prefilled.items():
        expect(page.get_by_label(label, exact=True)).to_have_value(value)
    evidence = page.get_by_label("Evidence", exact=True).input_value()
    assert evidence.startswith(uploaded.json["url"] + "#m"), evidence

    expires = today + timedelta(days=14)
    page.get_by_label("Expires on", exact=True).fill(expires.isoformat())
    page.get_by_label("Note").fill("Retries race the refund webhook; fix in review.")
    board.submit(page.get_by_role("button", name="Quarantine", exact=True))

    expect(page.get_by_role("status")).to_contain_text(f"Quarantined until {expires.isoformat()}")
    expect(page.get_by_role("heading", level=1)).to_have_text(FLAKY)
    board.nav("Ledger")
    entry_row = page.get_by_role("row").filter(has_text=FLAKY)
    expect(entry_row).to_contain_text("@finley")
    expect(entry_row).to_contain_text(expires.isoformat())
    expect(entry_row.get_by_role("link", name=evidence[:40])).to_have_attribute("href", evidence)
    board.finish("journey-1-ci-to-owner")

    served = call_api(board.base_url, "GET", f"/suites/{suite.slug}/ledger", token=read)
    assert served.status == 200
    assert served.json == {
        FLAKY: {
            "class": "flake",
            "seed_base": 9137,
            "n": 200,
            "fails": 9,
            "upper95": round(rules.upper95(9, 200), 4),
            "owner": "@finley",
            "expires": expires.isoformat(),
            "evidence": evidence,
        }
    }
