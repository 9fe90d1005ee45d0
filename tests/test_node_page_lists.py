"""The node page (issue 21): its measurements and verdicts each paged on their own instead
of scrolled in a box, the periods the node was quarantined shaded on its chart and listed
beside it, and a warning when a quarantined node's rate is getting worse (on the entry page
too)."""

import json
import re
from datetime import UTC, datetime, timedelta
from html import unescape
from urllib.parse import parse_qs

import pytest
from django.urls import reverse

from board.views.nodes import MEASUREMENTS_PER_PAGE, VERDICTS_PER_PAGE
from ledger.models import QuarantineEntry
from ledger.quarantine import quarantine_clear, quarantine_create
from runs.ingest import report_ingest, signals_ingest
from tests.helpers import body, measurement, node_page, record
from tests.world import build_world as shared_world

NODE = "tests/unit/test_pay.py::test_refund"
OTHERS = [measurement(f"t.py::t{i}") for i in range(40)]
HTMX = {"HX-Request": "true"}
REPORTS = MEASUREMENTS_PER_PAGE * 2 + 3
BATCHES = VERDICTS_PER_PAGE + 4


def at(today, days_ago: int, hours: int = 0) -> datetime:
    return datetime.combine(today - timedelta(days=days_ago), datetime.min.time(),
                            tzinfo=UTC) + timedelta(hours=hours)


def measure(suite, now, fails: int, n: int = 200):
    report_ingest(suite=suite, body=body([*OTHERS, measurement(NODE, n=n, fails=fails)]),
                  actor="ci", now=now)


def add_long_history(suite, today):
    """A report a day for REPORTS days (runs: 200 and the days ago; fails: the days ago,
    mod 7) and BATCHES batches."""
    for days_ago in range(REPORTS, 0, -1):
        measure(suite, at(today, days_ago), fails=days_ago % 7, n=200 + days_ago)
    for i in range(BATCHES):
        signals_ingest(suite=suite, body=body({"records": [record(NODE)], "patch": f"p{i}"}),
                       actor="ci", now=at(today, BATCHES - i, hours=2))


def build_world():
    """This module's shared world (tests/world.py): the suite of one of everything, and the
    node's long history in it, built once for a run of the tests that ask for it."""
    world = shared_world()
    add_long_history(world.suite, world.today)
    return world


@pytest.fixture
def long_history(world):
    """The suite (the world's) with the node's long history."""
    return world.suite


def page(client, suite, **query):
    return client.get(node_page(suite.slug, NODE), query).content.decode()


def section(html, heading):
    start = html.index(f'id="{heading}-heading"')
    return html[start:html.index("</section>", start)]


def dates(html):
    return re.findall(r'#m\d+">(\d{4}-\d\d-\d\d)</a>', html)


def test_each_list_is_paged_newest_first_not_scrolled(client_for, viewer, suite, today,
                                                      long_history):
    client = client_for(viewer)
    html = page(client, suite)
    assert "scroll-table" not in html  # no list scrolls in a box of its own
    shown = dates(section(html, "measurements"))
    expected = [(today - timedelta(days=d)).isoformat() for d in range(1, REPORTS + 1)]
    assert shown == expected[:MEASUREMENTS_PER_PAGE]
    assert f"{REPORTS} measurements, newest first: 1 to {MEASUREMENTS_PER_PAGE}" in html
    assert "Measurements, page 1 of 3" in html and "Verdicts, page 1 of 2" in html
    assert section(html, "verdicts").count('<span class="badge v-') == VERDICTS_PER_PAGE
    last = page(client, suite, mpage=3)
    assert dates(section(last, "measurements")) == expected[2 * MEASUREMENTS_PER_PAGE:]
    second = page(client, suite, vpage=2)
    assert section(second, "verdicts").count('<span class="badge v-') == 4
    # A list past its end shows its last page; the chart always shows the latest.
    assert dates(section(page(client, suite, mpage=99), "measurements")) == \
        expected[2 * MEASUREMENTS_PER_PAGE:]


def test_each_lists_links_keep_the_other_lists_page(client_for, viewer, suite, long_history):
    html = page(client_for(viewer), suite, mpage=2, vpage=2)
    measurements, verdicts = section(html, "measurements"), section(html, "verdicts")
    assert 'href="?mpage=3&amp;vpage=2"' in measurements
    assert 'href="?mpage=1&amp;vpage=2"' in measurements
    assert 'href="?mpage=2&amp;vpage=1"' in verdicts
    assert 'hx-target="#measurements-list" hx-swap="outerHTML" hx-push-url="true"' in html
    # Each link says which list it pages.
    assert "Next<span class=\"visually-hidden\"> measurements</span>" in measurements


@pytest.mark.parametrize("target", ["measurements-list", "verdicts-list"])
def test_with_htmx_a_page_link_swaps_only_its_list(client_for, viewer, suite, long_history,
                                                   target):
    client = client_for(viewer)
    url = node_page(suite.slug, NODE)
    swap = client.get(url, {"mpage": 2, "vpage": 2}, headers={**HTMX, "HX-Target": target})
    html = swap.content.decode()
    assert "<html" not in html and html.strip().startswith(f'<div id="{target}"')
    other = ({"measurements-list", "verdicts-list"} - {target}).pop()
    assert f'id="{other}"' not in html and "node-chart-data" not in html
    assert "data-focus" in html  # the keyboard stays with the list it paged
    # The other list's links are replaced too: they keep this list's new page.
    oob = re.search(rf'<nav class="pagination" id="{other}-pages".*?</nav>', html, re.S)[0]
    assert 'hx-swap-oob="true"' in oob and "data-announce" not in oob
    links = [parse_qs(unescape(href)[1:]) for href in re.findall(r'href="([^"]+)"', oob)]
    param = "mpage" if target == "measurements-list" else "vpage"
    assert links and all(query[param] == ["2"] for query in links)
    assert "HX-Target" in swap["Vary"]
    # Without htmx, or restoring history, the same address is the whole page.
    assert "<html" in client.get(url, {"mpage": 2}).content.decode()
    restore = {**HTMX, "HX-Target": target, "HX-History-Restore-Request": "true"}
    assert "<html" in client.get(url, {"mpage": 2}, headers=restore).content.decode()


@pytest.fixture
def periods(suite, today, long_history):
    """An entry from 20 to 12 days ago, cleared, and an open one from 5 days ago."""
    old = quarantine_create(suite=suite, nodeid=NODE, owner="@sam", evidence="ci/run-1",
                            expires=today + timedelta(days=5), actor="@sam", today=today)
    quarantine_clear(entry=old, note="Fixed.", actor="@sam")
    QuarantineEntry.objects.filter(pk=old.pk).update(created_at=at(today, 20, hours=9),
                                                     cleared_at=at(today, 12, hours=15))
    current = quarantine_create(suite=suite, nodeid=NODE, owner="@ana", evidence="ci/run-2",
                                expires=today + timedelta(days=20), actor="@ana", today=today)
    QuarantineEntry.objects.filter(pk=current.pk).update(created_at=at(today, 5, hours=9))
    return old, current


def test_the_quarantine_periods_are_shaded_on_the_chart_and_listed(client_for, viewer, suite,
                                                                  today, periods):
    old, current = periods
    html = page(client_for(viewer), suite)
    chart = json.loads(re.search(r'<script id="node-chart-data" type="application/json">'
                                 r"(.*?)</script>", html, re.S).group(1))
    day = lambda days_ago: (today - timedelta(days=days_ago)).isoformat()  # noqa: E731
    assert chart["bands"] == [
        {"from": day(20), "to": day(12), "label": f"entry {old.pk}"},
        {"from": day(5), "to": day(0), "label": f"entry {current.pk}"},
    ]
    listed = re.sub(r"<[^>]+>", "", re.search(r'<ul class="periods".*?</ul>', html, re.S)[0])
    assert f"Entry {old.pk}: {day(20)} to {day(12)} (cleared), 8 days" in listed
    assert f"Entry {current.pk}: {day(5)} to today (open), 5 days" in listed
    assert "Shaded: the periods the node was quarantined." in html


def test_a_node_never_quarantined_has_no_bands(client_for, viewer, suite, long_history):
    html = page(client_for(viewer), suite)
    assert '"bands": []' in html and 'class="periods"' not in html and "Shaded" not in html


@pytest.fixture
def quarantined_on(suite, today):
    """Quarantine the node on 2 failures in 200 runs; then measure it with ``fails``."""

    def make(*fails):
        measure(suite, at(today, 9), fails=2)
        entry = quarantine_create(suite=suite, nodeid=NODE, owner="@ana", n=200, fails=2,
                                  evidence="ci/run-7", expires=today + timedelta(days=20),
                                  actor="@ana", today=today)
        for i, failed in enumerate(fails):
            measure(suite, datetime.now(UTC) + timedelta(minutes=i + 1), fails=failed)
        return entry

    return make


def test_a_node_getting_worse_while_quarantined_is_warned_of(client_for, viewer, suite,
                                                             quarantined_on):
    entry = quarantined_on(30, 24, 36)
    client = client_for(viewer)
    for html in (page(client, suite),
                 client.get(reverse("entry", args=[suite.slug, entry.pk])).content.decode()):
        warning = re.search(r'<div class="warning-box worsening">.*?</p>\n</div>', html, re.S)[0]
        text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", warning))
        assert "Getting worse while quarantined." in text
        assert f"entry {entry.pk} was made" in text
        assert "2 of 200 runs failed: rate 0.0100, upper95 0.0357" in text
        assert "latest 3 measurements" in text
        assert "90 of 600 runs failed: rate 0.1500, lower95 0.1237" in text


@pytest.mark.parametrize("fails", [(2,), (4, 3, 5), ()], ids=["same", "noise", "unmeasured"])
def test_no_warning_on_noise(client_for, viewer, suite, quarantined_on, fails):
    entry = quarantined_on(*fails)
    client = client_for(viewer)
    assert "Getting worse" not in page(client, suite)
    entry_html = client.get(reverse("entry", args=[suite.slug, entry.pk])).content.decode()
    assert "Getting worse" not in entry_html


def test_a_cleared_entry_is_not_warned_of(client_for, viewer, suite, quarantined_on):
    entry = quarantined_on(30, 24, 36)
    quarantine_clear(entry=entry, note="Rewrote it.", actor="@ana")
    client = client_for(viewer)
    assert "Getting worse" not in page(client, suite)
    assert "Getting worse" not in client.get(
        reverse("entry", args=[suite.slug, entry.pk])).content.decode()


def test_the_lists_and_the_chart_take_a_fixed_number_of_queries(
    client_for, viewer, suite, periods, django_assert_max_num_queries
):
    client = client_for(viewer)
    with django_assert_max_num_queries(20):  # six of them the diagnosis's
        page(client, suite, mpage=2, vpage=2)
    with django_assert_max_num_queries(8):
        client.get(node_page(suite.slug, NODE), {"mpage": 2},
                   headers={**HTMX, "HX-Target": "measurements-list"})
