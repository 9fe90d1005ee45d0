"""Every page of the demo, as each role, on a phone (390 by 844) and on a desk (1280 by 800)
(issue 21, Acceptance): the document is never wider than the viewport, axe-core finds no
violation, the console stays clean, and on a desk the suite's menu keeps to one line. Each
page's screenshot at both sizes goes to test-artifacts/pages/ (and, with
UPDATE_README_SCREENSHOT=1, the flaky-tests page on a phone to docs/screenshot-phone.png, the
README's second picture).

axe-core is vendored for the tests only (tests/vendor/axe-core/, from npm) and run in the
page through Playwright, which the pages' Content-Security-Policy does not govern.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from board.demo import build_demo
from junit.models import NodeDay
from ledger.models import QuarantineEntry
from notify.models import Webhook, WebhookPost
from runs.models import Report, VerdictBatch

from .board import ARTIFACTS

pytestmark = pytest.mark.browser

AXE = (Path(__file__).resolve().parents[1] / "vendor" / "axe-core" / "axe.min.js").read_text()
README_PHONE_SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshot-phone.png"
SIZES = {"phone": (390, 844), "desk": (1280, 800)}
VIOLATIONS = """async () => (await axe.run(document, {resultTypes: ["violations"]})).violations
  .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).slice(0, 3).join(" | ")}`)"""
WIDTH = "() => document.documentElement.scrollWidth"
MENU_LINES = """() => new Set(Array.from(document.querySelectorAll(".suitenav a"))
  .map((a) => { const box = a.getBoundingClientRect(); return Math.round(box.y + box.height / 2); })
).size"""


def demo_pages(suite, role: str) -> dict[str, tuple[str, int]]:
    """The pages a role opens, by name: (path, the status it answers)."""
    slug = suite.slug
    entry = QuarantineEntry.objects.filter(suite=suite).order_by("pk").first()
    node = NodeDay.objects.filter(suite=suite, flaky_failures__gt=0).first().node
    rerun = VerdictBatch.objects.filter(suite=suite, attempt__gt=1).latest("created_at")
    pages = {
        "overview": reverse("overview", args=[slug]),
        "ledger": reverse("ledger", args=[slug]),
        "entry": reverse("entry", args=[slug, entry.pk]),
        "reports": reverse("reports", args=[slug]),
        "report": reverse("report", args=[slug, Report.objects.filter(suite=suite).latest(
            "created_at").pk]),
        "verdicts": reverse("verdicts", args=[slug]),
        "batch": reverse("batch", args=[slug, VerdictBatch.objects.filter(suite=suite).latest(
            "created_at").pk]),
        "patch": reverse("patch", args=[slug, rerun.patch]),  # its attempts and flip
        "node": reverse("node", args=[slug, node.key]),
        "trends": reverse("trends", args=[slug]),
        "flaky": reverse("flaky", args=[slug]),
        "connect": reverse("connect", args=[slug]),
        "owners": reverse("owners", args=[slug]),
        "not found": "/suites/no-such-suite/",
    }
    answers = {name: (path, 404 if name == "not found" else 200) for name, path in pages.items()}
    for name, url_name in (("settings", "settings"), ("webhook", "settings_webhook")):
        answers[name] = (reverse(url_name, args=[slug]), 200 if role == "lead" else 403)
    if role != "viewer":
        answers["new entry"] = (reverse("entry_new", args=[slug]), 200)
    return answers


@pytest.fixture
def demo(transactional_db, today):
    """The demo, with a webhook and its log: a test sent, a delivery that timed out."""
    suite = build_demo(today)
    url = "https://hooks.example.com/services/T0/B0/demo"
    now = timezone.now()
    Webhook.objects.create(suite=suite, url=url, format="slack", secret="never-shown",
                           created_at=now, created_by="@lead")
    WebhookPost.objects.create(id=uuid.uuid4(), suite=suite, url=url, at=now, test=True,
                               items=2, status="sent", attempts=1, response_code=200)
    WebhookPost.objects.create(id=uuid.uuid4(), suite=suite, url=url, at=now, items=5,
                               status="failed", attempts=3,
                               error="timeout: no answer within 5 s")
    return suite


@pytest.mark.parametrize("role", ["lead", "owner", "viewer"])
def test_every_page_fits_the_screen_and_passes_axe(browser, live_server, demo, role):
    client = Client()
    client.force_login(demo.memberships.get(role=role).user)
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    problems, console = [], []
    shots = ARTIFACTS / "pages"
    shots.mkdir(parents=True, exist_ok=True)
    for size, (width, height) in SIZES.items():
        context = browser.new_context(viewport={"width": width, "height": height})
        context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": session,
                              "url": live_server.url}])
        page = context.new_page()
        page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda error: console.append(str(error)))
        for name, (path, status) in demo_pages(demo, role).items():
            response = page.goto(live_server.url + path)
            page.wait_for_load_state("networkidle")
            where = f"{role} {size} {name}"
            if response.status != status:
                problems.append(f"{where}: {response.status}, not {status}")
            if page.evaluate(WIDTH) > width:
                problems.append(f"{where}: {page.evaluate(WIDTH)} px wide")
            if size == "desk" and page.evaluate(MENU_LINES) > 1:
                problems.append(f"{where}: the suite's menu wraps onto a second line")
            page.evaluate(AXE)
            problems += [f"{where}: axe {v}" for v in page.evaluate(VIOLATIONS)]
            # A page answered with an error status logs that status; nothing else may log.
            problems += [f"{where}: console {c}" for c in console
                         if status == 200 or f"status of {status}" not in c]
            console.clear()
            shot = shots / f"{role}-{size}-{name.replace(' ', '-')}"
            page.screenshot(path=f"{shot}.png", full_page=True)
            page.screenshot(path=f"{shot}-screen.png")
        context.close()
    if role == "lead" and os.environ.get("UPDATE_README_SCREENSHOT"):
        shutil.copyfile(shots / "lead-phone-flaky-screen.png", README_PHONE_SCREENSHOT)
    assert problems == []
