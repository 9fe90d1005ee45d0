"""The pages in a real browser (Debian's Chromium through Playwright): htmx swaps in place
under the Content-Security-Policy, without a reload and without a policy violation."""

import shutil
from datetime import timedelta

import pytest

from flakeboard import rules
from ledger.models import AuditEvent, QuarantineEntry
from ledger.quarantine import quarantine_create
from runs.ingest import report_ingest
from tests.conftest import PASSWORD
from tests.helpers import body, measurement

CHROMIUM = shutil.which("chromium")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed"),
]
NODE = "tests/test_pay.py::test_refund_retry"


@pytest.fixture
def entry(transactional_db, suite, owner, today):
    rows = [measurement(f"t.py::t{i}") for i in range(40)]
    report_ingest(suite=suite, body=body([*rows, measurement(NODE, fails=7)]), actor="ci")
    return quarantine_create(suite=suite, nodeid=NODE, owner="@finley", evidence="ci/run-1",
                             expires=today + timedelta(days=9), actor="@finley", today=today)


class Browser:
    """A signed-in Chromium page that records console errors and policy violations."""

    def __init__(self, base_url):
        from playwright.sync_api import sync_playwright

        self.base_url = base_url
        self.problems: list[str] = []
        self._playwright = sync_playwright().start()
        self._browser = self._playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"],
        )
        self.page = self._browser.new_page()
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.problems.append(str(error)))

    def _console(self, message):
        if message.type in ("error", "warning"):
            self.problems.append(message.text)

    def sign_in(self, username):
        self.page.goto(self.base_url + "/accounts/login/")
        self.page.fill("#id_username", username)
        self.page.fill("#id_password", PASSWORD)
        self.page.click("button[type=submit]")
        self.page.wait_for_load_state("networkidle")

    def close(self):
        if self._playwright is not None:
            self._browser.close()
            self._playwright.stop()
            self._playwright = None


@pytest.fixture
def chromium(live_server):
    # The ORM is used before and after, never while Playwright's loop runs.
    opened = []

    def open_browser():
        opened.append(Browser(live_server.url))
        return opened[-1]

    yield open_browser
    for each in opened:
        each.close()


def on_the_ledger(chromium, username, slug) -> Browser:
    """A browser signed in as ``username`` on the suite's ledger, marked to tell a reload."""
    browser = chromium()
    browser.sign_in(username)
    browser.page.goto(f"{browser.base_url}/suites/{slug}/ledger/")
    browser.page.evaluate("window.notReloaded = true")
    return browser


def test_renew_in_place_from_the_ledger_row(chromium, suite, entry):
    pk, slug = entry.pk, suite.slug
    chromium = on_the_ledger(chromium, "finley", slug)
    page = chromium.page
    page.click(f"#entry-{pk} >> text=Renew")
    page.wait_for_selector(f"#entry-{pk}.editing")
    page.fill(f"#id_renew{pk}_evidence", "ci/run-2")
    page.click(f"#entry-{pk} button[type=submit]")
    page.wait_for_selector(f"#entry-{pk} .notice")
    notice = page.inner_text(f"#entry-{pk} .notice")
    still_there = page.evaluate("window.notReloaded === true")
    url = page.url
    problems = list(chromium.problems)
    chromium.close()

    assert notice.startswith("Renewed until")
    assert still_there and url.endswith(f"/suites/{slug}/ledger/")
    assert problems == []
    renewed = QuarantineEntry.objects.get(pk=pk)
    assert renewed.renewals == 1 and renewed.evidence == "ci/run-2"
    assert AuditEvent.objects.get(entry_id=pk, action="renew").actor == "@finley"


def test_filters_push_the_url_and_the_entry_page_loads_measurements(
    chromium, suite, entry, viewer
):
    slug, pk = suite.slug, entry.pk
    chromium = on_the_ledger(chromium, "vic", slug)
    page = chromium.page
    page.select_option("#id_state", "expiring")
    page.wait_for_url("**state=expiring**")
    rows_when_expiring = page.locator("tr[id^=entry-]").count()
    page.select_option("#id_state", "open")
    page.wait_for_url("**state=open**")
    rows_when_open = page.locator("tr[id^=entry-]").count()
    still_there = page.evaluate("window.notReloaded === true")
    page.goto(f"{chromium.base_url}/suites/{slug}/ledger/{pk}/")
    page.wait_for_selector("section[aria-labelledby=latest-heading] table")
    latest = page.inner_text("section[aria-labelledby=latest-heading] table")
    problems = list(chromium.problems)
    chromium.close()

    assert (rows_when_expiring, rows_when_open, still_there) == (0, 1, True)
    assert f"{rules.upper95(7, 200):.4f}" in latest
    assert problems == []
