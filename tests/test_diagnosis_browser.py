"""The node page's "Why it is flaky" panel in a real browser: its copy button puts the
reproduction command on the clipboard, under the Content-Security-Policy."""

import pytest

from tests.helpers import node_page
from tests.test_node_diagnoses import SEEDED, measured
from tests.test_pages_browser import CHROMIUM, chromium  # noqa: F401

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed"),
]
NODE = "tests/test_shop.py::test_discount_is_never_negative[basket-with-many-items]"
COMMAND = f"python3 flakeboard_ci.py replay '{NODE}' --seed 9141"


@pytest.fixture
def seeded(transactional_db, suite, viewer):
    measured(suite, NODE, n=20, fails=3, classification="flaky",
             experiments={"seeded": {**SEEDED, "command": COMMAND}})
    return node_page(suite.slug, NODE)


def test_the_copy_button_copies_the_command(chromium, seeded):  # noqa: F811
    browser = chromium()
    browser.sign_in("vic")
    page = browser.page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"],
                                   origin=browser.base_url)
    page.goto(browser.base_url + seeded)
    assert page.inner_text("#diagnosis-command") == COMMAND
    page.get_by_role("button", name="Copy the command").click()
    page.wait_for_function("() => document.querySelector('#diagnosis-command-status')"
                           ".textContent === 'Copied.'")
    assert page.evaluate("navigator.clipboard.readText()") == COMMAND
    assert browser.problems == []
