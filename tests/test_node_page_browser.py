"""The node page in a real browser: the quarantine periods are shaded on its chart, and a
page link swaps only its own list, under the Content-Security-Policy."""

from datetime import timedelta

import pytest

from tests.helpers import node_page
from tests.test_node_page_lists import NODE, add_long_history, periods  # noqa: F401
from tests.test_pages_browser import CHROMIUM, chromium  # noqa: F401

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed"),
]

# The share of pixels of a column of the chart area that have the band's colour: amber,
# (217, 154, 0), at 16% on the transparent canvas, give or take the canvas's rounding.
BAND_PIXELS = """(day) => {
  const canvas = document.querySelector("canvas.chart");
  const chart = Chart.getChart(canvas);
  const labels = chart.data.labels;
  const x = chart.scales.x.getPixelForValue(labels.indexOf(day));
  const ratio = canvas.width / canvas.clientWidth;
  const area = chart.chartArea;
  const column = canvas.getContext("2d").getImageData(
    Math.round(x * ratio) - 3, Math.round(area.top * ratio),
    1, Math.round((area.bottom - area.top) * ratio)).data;
  let banded = 0;
  for (let i = 0; i < column.length; i += 4) {
    const [r, g, b, a] = [column[i], column[i + 1], column[i + 2], column[i + 3]];
    if (Math.abs(r - 217) <= 6 && Math.abs(g - 154) <= 6 && b <= 6 && Math.abs(a - 41) <= 4) {
      banded += 1;
    }
  }
  return banded / (column.length / 4);
}"""


@pytest.fixture
def long_history(transactional_db, suite, today):
    """The node's long history in this test's own suite: the live server reads what is
    committed, so not the shared world, which lives in a transaction of its own."""
    add_long_history(suite, today)
    return suite


@pytest.fixture
def node(transactional_db, suite, viewer, periods):  # noqa: F811
    return node_page(suite.slug, NODE)


def test_the_quarantine_periods_are_shaded_and_paging_swaps_one_list(chromium, node, today):  # noqa: F811
    browser = chromium()
    browser.sign_in("vic")
    page = browser.page
    page.goto(browser.base_url + node)
    page.wait_for_function("() => window.Chart && Chart.getChart(document.querySelector"
                           "('canvas.chart'))")
    assert browser.problems == []
    # Quarantined 20 to 12 days ago (cleared) and from 5 days ago (open); not in between.
    # The days are the board's (the browser's clock may be on another date).
    def band(days_ago):
        return page.evaluate(BAND_PIXELS, (today - timedelta(days=days_ago)).isoformat())

    for days_ago in (16, 13, 4, 1):
        assert band(days_ago) > 0.5, days_ago
    for days_ago in (22, 10, 7):
        assert band(days_ago) == 0, days_ago
    browser.problems.clear()  # Chromium's advice on reading a canvas back, for this test

    page.evaluate("window.notReloaded = true;"
                  "document.querySelector('#verdicts-list').dataset.kept = 'yes'")
    page.get_by_role("link", name="Next measurements").click()
    page.wait_for_url("**?mpage=2")
    page.wait_for_function("() => document.activeElement.getAttribute('aria-label')"
                           " === 'Measurements table'")
    assert page.evaluate("window.notReloaded && document.querySelector('#verdicts-list')"
                         ".dataset.kept") == "yes"
    assert page.locator("#live").inner_text() == "Measurements, page 2 of 3"
    page.get_by_role("link", name="Next verdicts").click()
    page.wait_for_url("**?mpage=2&vpage=2")
    assert browser.problems == []
