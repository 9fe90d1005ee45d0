"""The board as a user meets it in Chromium, watched for what a user should never meet:
a JavaScript error, a failed or refused request, a dialog. Plus the API as CI calls it."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from playwright.sync_api import Page, expect

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
# The two screens every journey that changes with the width is walked on.
PHONE = {"width": 390, "height": 844}
DESK = {"width": 1280, "height": 800}
# How Chromium names a request it cancelled itself (the page left before the answer).
ABORTED = "net::ERR_ABORTED"


class Board:
    """A Chromium page on the live board that records every problem it meets.

    A problem is a console error (a Content-Security-Policy violation included), an
    uncaught exception, a request that failed, a response of 400 or more from the board
    itself, or a dialog (which is dismissed at once).
    """

    def __init__(self, page: Page, base_url: str):
        self.page = page
        self.base_url = base_url.rstrip("/")
        self.problems: list[str] = []
        self.dialogs: list[str] = []
        self.navigations: list[str] = []
        self.finished = False
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.problems.append(f"uncaught: {error}"))
        page.on("requestfailed", self._request_failed)
        page.on("response", self._response)
        page.on("dialog", self._dialog)
        page.on("framenavigated", self._navigated)

    def _console(self, message) -> None:
        if message.type == "error":
            self.problems.append(f"console error on {self.page.url}: {message.text}")

    def _request_failed(self, request) -> None:
        if request.failure == ABORTED and request.resource_type in ("xhr", "fetch"):
            # The browser cancelled a fetch the page no longer waited for: the page was
            # left (a form sent while htmx's delayed owner offer was on its way). No answer
            # of the board's failed.
            return
        self.problems.append(f"request failed: {request.method} {request.url}: {request.failure}")

    def _response(self, response) -> None:
        if response.status >= 400 and response.url.startswith(self.base_url + "/"):
            self.problems.append(f"{response.status} for {response.request.method} {response.url}")

    def _dialog(self, dialog) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def _navigated(self, frame) -> None:
        if frame == self.page.main_frame:
            self.navigations.append(frame.url)

    def url(self, path: str) -> str:
        return self.base_url + path

    def goto(self, path: str) -> None:
        self.page.goto(self.url(path))
        self.settle()

    def settle(self) -> None:
        """Wait until the page has loaded, and htmx the panels it fetches after loading."""
        self.page.wait_for_load_state("load")
        expect(self.page.locator("[hx-trigger='load']")).to_have_count(0)
        expect(self.page.locator(".htmx-request")).to_have_count(0)

    def follow(self, target) -> None:
        """Click a link (or a plain form's button) and wait until the next page has loaded,
        so that nothing of this one is still loading when the journey moves on."""
        with self.page.expect_event("load"):
            target.click()
        self.settle()

    def nav(self, name: str) -> None:
        """Go to one of the suite's pages through the navigation bar."""
        suite_nav = self.page.get_by_role("navigation", name="Suite")
        self.follow(suite_nav.get_by_role("link", name=name))

    def settings_section(self, slug: str, section: str):
        """Go to the suite's settings through the navigation bar of its overview; one
        section of the page, by its id."""
        self.goto(f"/suites/{slug}/")
        self.nav("Settings")
        return self.page.locator(f"#{section}")

    def submit(self, button, *, in_place: bool = False) -> None:
        """Press a form's button and check the board answered the POST without an error.
        A plain form leads to the next page; an htmx form (``in_place``) swaps its answer in."""
        with self.page.expect_response(lambda r: r.request.method == "POST") as answer:
            if in_place:
                button.click()
            else:
                with self.page.expect_event("load"):
                    button.click()
        response = answer.value
        assert response.status < 400, f"{response.status} for POST {response.url}"
        self.settle()

    def sign_in(self, username: str, password: str) -> None:
        """Sign in through the real form, as a person does; lands on the home page."""
        page = self.page
        self.goto("/accounts/login/")
        page.get_by_label("User name").fill(username)
        page.get_by_label("Password").fill(password)
        self.submit(page.get_by_role("button", name="Sign in"))
        assert "/accounts/login/" not in page.url, "the sign-in was refused"
        expect(page.locator(".whoami")).to_contain_text(f"@{username}")

    def sign_out(self) -> None:
        self.follow(self.page.get_by_role("button", name="Sign out"))
        expect(self.page.get_by_role("heading", name="Sign in")).to_be_visible()

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=path, full_page=True)
        return path

    def finish(self, name: str) -> None:
        """Keep a screenshot of the last screen, then fail on any problem met on the way."""
        self.settle()
        self.screenshot(name)
        self.finished = True
        assert self.problems == [], "\n".join(self.problems)
        assert self.dialogs == [], "\n".join(self.dialogs)


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict
    json: object


def call_api(base_url: str, method: str, path: str, *, token: str, query=None, body=None):
    """One request to the board's JSON API, as CI sends it (Bearer token, JSON body)."""
    url = base_url.rstrip("/") + "/api/v1" + path
    if query:
        url += "?" + urllib.parse.urlencode(query)
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, raw, got = response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        status, raw, got = error.code, error.read(), dict(error.headers)
    return Answer(status, got, json.loads(raw) if raw else None)
