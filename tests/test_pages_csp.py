"""The pages live under a strict Content-Security-Policy: no inline script, style or event
handler anywhere, htmx served from our own static files, and a navigation on every page."""

import re
from datetime import timedelta

import pytest
from django.contrib.staticfiles import finders
from django.urls import NoReverseMatch, reverse

from ledger.quarantine import quarantine_create
from runs.ingest import report_ingest, signals_ingest
from tests.helpers import body, measurement, record, suite_pages
from tests.world import module_world

NODE = "tests/test_pay.py::test_refund_retry"


def add_pages(suite, today):
    rows = [measurement(f"t.py::t{i}") for i in range(40)]
    report = report_ingest(suite=suite, body=body([*rows, measurement(NODE, fails=7)]),
                           actor="ci").upload
    batch = signals_ingest(suite=suite, body=body({"patch": "feature/refunds", "commit": "c1",
                                                   "records": [record(NODE)]}),
                           actor="ci").upload
    entry = quarantine_create(suite=suite, nodeid=NODE, owner="@finley", evidence="ci/run-1",
                              expires=today + timedelta(days=9), actor="@finley", today=today)
    return suite_pages(suite, entry=entry, report=report, batch=batch, node=NODE)


build_world, pages = module_world("pages", add_pages)


def inline_code(html: str) -> list[str]:
    """Inline scripts (JSON data islands excepted), style attributes and elements, and
    inline event handlers."""
    found = [tag for tag in re.findall(r"<script\b[^>]*>", html)
             if "src=" not in tag and 'type="application/json"' not in tag]
    found += re.findall(r"<style\b", html)
    found += re.findall(r"\sstyle\s*=", html)
    found += re.findall(r"\son[a-z]+\s*=", html)
    found += re.findall(r"\shx-on[:-]", html)
    return found


def test_no_page_holds_inline_code(client_for, owner, pages):
    client = client_for(owner)
    for name, url in pages.items():
        response = client.get(url)
        assert response.status_code == 200, name
        assert inline_code(response.content.decode()) == [], name
        assert "script-src 'self'" in response["Content-Security-Policy"]


def test_htmx_is_vendored_and_configured_for_the_policy(client_for, viewer, pages):
    html = client_for(viewer).get(pages["ledger"]).content.decode()
    assert '<script src="/static/vendor/htmx/htmx.min.js" defer></script>' in html
    config = re.search(r'<meta name="htmx-config" content=\'([^\']*)\'>', html)
    assert config and '"includeIndicatorStyles": false' in config.group(1)
    assert finders.find("vendor/htmx/htmx.min.js")
    assert finders.find("vendor/htmx/LICENSE")
    assert "X-CSRFToken" in re.search(r"<body hx-headers='([^']*)'>", html).group(1)


@pytest.mark.parametrize("name", ["overview", "ledger", "reports", "verdicts"])
def test_the_suite_navigation_marks_the_current_page(client_for, viewer, suite, pages, name):
    html = client_for(viewer).get(pages[name]).content.decode()
    nav = re.search(r'<nav class="suitenav".*?</nav>', html, re.S).group(0)
    for target in ("overview", "ledger", "reports", "verdicts"):
        assert f'href="{reverse(target, args=[suite.slug])}"' in nav
    assert re.findall(r'href="([^"]+)" aria-current="page"', nav) == [pages[name]]


def test_settings_are_linked_for_leads_only(client_for, lead, viewer, pages):
    def nav_of(user):
        html = client_for(user).get(pages["overview"]).content.decode()
        return re.search(r'<nav class="suitenav".*?</nav>', html, re.S).group(0)

    assert ">Settings</a>" not in nav_of(viewer)
    lead_nav = nav_of(lead)
    try:
        settings_url = reverse("settings", args=["acme"])
    except NoReverseMatch:  # the settings page may not exist yet
        settings_url = None
    assert (settings_url is not None) == (f'href="{settings_url}"' in lead_nav)


def test_every_input_has_a_label(client_for, owner, pages):
    client = client_for(owner)
    for name in ("ledger", "entry", "entry_new", "entry_renew", "entry_clear", "report", "batch"):
        html = client.get(pages[name]).content.decode()
        for tag in re.findall(r"<(?:input|select|textarea)\b[^>]*>", html):
            if re.search(r'type="(hidden|submit)"', tag):
                continue
            field_id = re.search(r'id="([^"]+)"', tag)
            assert field_id, (name, tag)
            assert f'<label for="{field_id.group(1)}"' in html, (name, tag)
