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
        """Wait until htmx has loaded the panels a page fetches after it loads."""
        expect(self.page.locator("[hx-trigger='load']")).to_have_count(0)
        expect(self.page.locator(".htmx-request")).to_have_count(0)

    def submit(self, button) -> None:
        """Press a form's button and check the board answered the POST without an error."""
        with self.page.expect_response(lambda r: r.request.method == "POST") as answer:
            button.click()
        response = answer.value
        assert response.status < 400, f"{response.status} for POST {response.url}"

    def sign_in(self, username: str, password: str) -> None:
        """Sign in through the real form, as a person does; lands on the home page."""
        page = self.page
        page.goto(self.url("/accounts/login/"))
        page.get_by_label("User name").fill(username)
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(lambda url: "/accounts/login/" not in url)
        expect(page.locator(".whoami")).to_contain_text(f"@{username}")
        self.settle()

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
