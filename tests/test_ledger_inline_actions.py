"""Renewing and clearing in a ledger row keep the page current and the focus in place: the
answer carries the changed row, and out of band the tiles and the count line; the opened
form and the changed row are marked for focus (static/js/focus.js), the trends panel's
summary for the page's live region; every row's actions are named after their node, every
chart's CSV link after its chart."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse

from ledger.quarantine import quarantine_create
from runs.ingest import report_ingest
from tests.helpers import body, measurement
from tests.world import module_world

HTMX = {"HX-Request": "true"}
NODES = ("tests/test_pay.py::test_refund_retry", "tests/test_cart.py::test_total")


def add_entries(suite, today):
    rows = [measurement(f"tests/test_many.py::test_{i}") for i in range(40)]
    flaky = [measurement(nodeid, fails=7) for nodeid in NODES]
    report_ingest(suite=suite, body=body([*rows, *flaky]), actor="ci")
    return [
        quarantine_create(
            suite=suite, nodeid=nodeid, owner="@finley", expires=today + timedelta(days=12),
            evidence="ci/run-1", actor="@finley", today=today, n=200, fails=7,
        )
        for nodeid in NODES
    ]


build_world, entries = module_world("entries", add_entries)


def htmx_from(suite, query=""):
    """The headers of an htmx request sent from the ledger page filtered by ``query``."""
    page = "http://testserver" + reverse("ledger", args=[suite.slug]) + query
    return {**HTMX, "HX-Current-URL": page}


def clear_in_row(client, suite, entry, query=""):
    return client.post(reverse("entry_clear", args=[suite.slug, entry.pk]),
                       {"note": "Fixed the race.", "place": "row"},
                       headers=htmx_from(suite, query)).content.decode()


def tile(html, state):
    found = re.search(rf'href="[^"]*\?state={state}"><span class="figure">(\d+)</span>', html)
    return int(found.group(1))


def out_of_band(html, element_id):
    found = re.search(rf'<(\w+) id="{element_id}"[^>]*hx-swap-oob="true"[^>]*>(.*?)</\1>', html,
                      re.S)
    assert found, f"no out-of-band #{element_id}"
    return found.group(2)


def test_a_clear_in_a_row_brings_the_tiles_and_the_count_up_to_date(
        client_for, owner, suite, entries):
    client = client_for(owner)
    page = client.get(reverse("ledger", args=[suite.slug])).content.decode()
    assert tile(page, "active") == 2 and "2 entries" in page
    html = clear_in_row(client, suite, entries[0])
    assert html.lstrip().startswith(f'<tr id="entry-{entries[0].pk}" class="state-cleared"')
    assert tile(out_of_band(html, "glance"), "active") == 1
    assert "1 of " in out_of_band(html, "glance")  # one node quarantined now
    assert out_of_band(html, "result-count").startswith("1 entry.")


def test_the_count_follows_the_filters_of_the_page_it_came_from(
        client_for, owner, suite, entries):
    html = clear_in_row(client_for(owner), suite, entries[0], "?q=test_pay")
    assert out_of_band(html, "result-count").startswith("0 entries.")  # 1 unfiltered
    assert "ledger.csv?q=test_pay" in out_of_band(html, "result-count")


def test_a_renewal_in_a_row_updates_the_tiles_too(client_for, owner, suite, entries, today):
    expires = (today + timedelta(days=20)).isoformat()
    response = client_for(owner).post(
        reverse("entry_renew", args=[suite.slug, entries[1].pk]),
        {"expires": expires, "evidence": "ci/run-2", "place": "row"}, headers=htmx_from(suite))
    html = response.content.decode()
    assert f'<time datetime="{expires}">' in html
    assert tile(out_of_band(html, "glance"), "active") == 2
    assert out_of_band(html, "result-count").startswith("2 entries.")


@pytest.mark.parametrize("action", ["entry_renew", "entry_clear"])
def test_the_opened_form_is_marked_for_focus(client_for, owner, suite, entries, action):
    html = client_for(owner).get(reverse(action, args=[suite.slug, entries[0].pk]),
                                 {"place": "row"}, headers=HTMX).content.decode()
    assert re.search(r'<form class="inline-form"[^>]* data-focus', html)
    assert 'hx-swap-oob' not in html  # only a finished action changes the figures


def test_the_changed_row_takes_the_focus_and_says_what_changed(
        client_for, owner, suite, entries):
    html = clear_in_row(client_for(owner), suite, entries[0])
    assert re.match(r'\s*<tr [^>]*tabindex="-1" data-focus>', html)
    assert '<p class="notice" role="status" data-announce>Cleared' in html


def test_the_entry_page_focuses_its_notice(client_for, owner, suite, entries):
    html = client_for(owner).post(
        reverse("entry_clear", args=[suite.slug, entries[0].pk]),
        {"note": "Test deleted.", "place": "entry"}, headers=HTMX).content.decode()
    assert re.search(
        r'<p class="notice" role="status" tabindex="-1" data-focus data-announce>Cleared', html)


def test_every_row_action_is_named_after_its_node(client_for, owner, suite, entries):
    html = client_for(owner).get(reverse("ledger", args=[suite.slug])).content.decode()
    for nodeid in NODES:
        named = f'<span class="visually-hidden"> {nodeid}</span></a>'
        assert html.count(named) == 2  # Renew and Clear


def test_the_page_has_one_live_region_for_announcements(client_for, owner, suite, entries):
    html = client_for(owner).get(reverse("ledger", args=[suite.slug])).content.decode()
    assert html.count('id="live"') == 1 and 'aria-live="polite"' in html
    assert "js/focus.js" in html


def test_the_trends_panel_announces_its_range_and_names_its_csv_links(
        client_for, owner, suite, entries):
    html = client_for(owner).get(reverse("trends", args=[suite.slug])).content.decode()
    assert '<p class="range-summary" data-announce>' in html
    names = re.findall(r'download>CSV<span class="visually-hidden"> of ([^<]+)</span>', html)
    assert names and len(set(names)) == len(names)
