"""Journey 4, a lead reviews trends on the demo suite: the overview (the README's
screenshot), every trends chart drawn by Chart.js from its data, the range switched from
30 to 90 days in place, the distribution read out in a sentence; then a tier rule added,
after the warning, that turns a quarantined node into a tier violation."""

import os
import re
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import expect

from board.demo import DEMO_PASSWORD, build_demo
from flakeboard import rules
from ledger.models import QuarantineEntry, TierRule

from .board import ARTIFACTS

pytestmark = pytest.mark.browser

README_SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshot.png"

# Every canvas.chart: its size on screen, and what Chart.js holds for it.
CHARTS = """() => Array.from(document.querySelectorAll("canvas.chart")).map((canvas) => {
  const chart = Chart.getChart(canvas);
  const box = canvas.getBoundingClientRect();
  return {
    source: canvas.dataset.chartSource,
    width: box.width,
    height: box.height,
    labels: chart ? chart.data.labels : null,
    datasets: chart ? chart.data.datasets.map((d) => ({label: d.label, data: d.data})) : null,
  };
})"""
ALL_DRAWN = """() => {
  const canvases = Array.from(document.querySelectorAll("canvas.chart"));
  return canvases.length > 0 && canvases.every((canvas) => Chart.getChart(canvas))
    && Object.keys(Chart.instances).length === canvases.length;
}"""


@pytest.fixture
def demo(transactional_db, today):
    return build_demo(today)


def _drawn(board) -> list[dict]:
    """Every chart once Chart.js has drawn it: on screen, with data in every dataset."""
    board.page.wait_for_function(ALL_DRAWN)
    charts = board.page.evaluate(CHARTS)
    for chart in charts:
        where = chart["source"]
        assert chart["width"] > 0 and chart["height"] > 0, where
        assert chart["labels"], where
        assert chart["datasets"], where
        for dataset in chart["datasets"]:
            assert len(dataset["data"]) == len(chart["labels"]), (where, dataset["label"])
        values = [v for d in chart["datasets"] for v in d["data"] if v is not None]
        assert any(v > 0 for v in values), f"{where} draws nothing but zeros"
    return charts


def _switch_range(board, label, days):
    page = board.page
    page.get_by_label("Range", exact=True).select_option(label=label)
    page.wait_for_url(re.compile(rf"[?&]range={days}(&|$)"))
    expect(page.locator(".range-summary")).to_contain_text(f": {days} days, per day")
    board.settle()
    return _drawn(board)


def _a_quarantined_node(suite, today) -> str:
    entry = (
        QuarantineEntry.objects.filter(suite=suite)
        .in_state(rules.EntryState.ACTIVE, today)
        .select_related("node")
        .order_by("node__nodeid")
        .first()
    )
    return entry.node.nodeid


def test_lead_reviews_trends_and_adds_a_tier_rule_after_the_warning(board, demo, today):
    page = board.page
    board.sign_in("lead", DEMO_PASSWORD)
    expect(page.get_by_role("heading", level=1)).to_contain_text(demo.name)
    overview = _drawn(board)
    assert len(overview) == 1
    overview_png = board.screenshot("journey-4-overview")
    if os.environ.get("UPDATE_README_SCREENSHOT"):
        shutil.copyfile(overview_png, README_SCREENSHOT)

    board.nav("Trends")
    figures = page.locator("#trends-panel figure")
    expect(figures.first).to_be_visible()
    expect(page.get_by_text("Nothing to draw for this range.")).to_have_count(0)
    assert len(_drawn(board)) == figures.count()

    page.evaluate("window.__sameDocument = true")
    month = {c["source"]: c for c in _switch_range(board, "last 30 days", 30)}
    quarter = {c["source"]: c for c in _switch_range(board, "last 90 days", 90)}
    assert page.evaluate("window.__sameDocument") is True
    assert month.keys() == quarter.keys() and len(quarter) == figures.count()
    per_day = [key for key in quarter if len(quarter[key]["labels"]) == 90]
    assert per_day, "no chart shows the 90 days day by day"
    for key in per_day:
        assert len(month[key]["labels"]) == 30
        assert month[key]["labels"] == quarter[key]["labels"][-30:]

    board.screenshot("journey-4-trends-90-days")

    distributions = page.locator("#trends-panel figure").filter(has_text="distribution")
    assert distributions.count() >= 2
    for figure in distributions.all():
        source = figure.locator("canvas.chart").get_attribute("data-chart-source")
        leading = quarter[source]["labels"][0]
        reading = figure.locator("p.reading")
        expect(reading).to_be_visible()
        expect(reading).to_contain_text(leading)
        expect(reading).to_have_text(re.compile(r"\d+% of "))

    nodeid = _a_quarantined_node(demo, today)
    board.nav("Settings")
    with page.expect_response("**/tier-rules/preview/**"):
        page.get_by_label("Tier", exact=True).select_option("1")
    page.get_by_label("Glob").fill(nodeid)
    preview = page.locator("#rule-preview")
    expect(preview).to_contain_text("1 open entry would become a tier violation")
    expect(preview).to_contain_text(nodeid)
    board.submit(page.get_by_role("button", name="Add rule"))

    warning = page.get_by_role("alert").filter(has_text="would turn 1 quarantined node")
    expect(warning).to_contain_text("into a tier violation")
    assert not TierRule.objects.filter(suite=demo, glob=nodeid).exists()
    board.submit(warning.get_by_role("button", name="Add the rule anyway"))
    expect(page.get_by_role("status")).to_contain_text(
        f"Rule “{nodeid}” added: 1 quarantine entry is now tier violations."
    )

    board.nav("Ledger")
    page.get_by_label("State").select_option(label="Tier violation")
    page.wait_for_url("**state=tier_violation**")
    board.settle()
    row = page.locator("#results tbody tr").filter(has_text=nodeid)
    expect(row).to_contain_text("Tier violation")
    board.finish("journey-4-lead-trends")

    entry = QuarantineEntry.objects.open().get(suite=demo, node__nodeid=nodeid)
    assert entry.state(today) is rules.EntryState.TIER_VIOLATION
    assert (ARTIFACTS / "journey-4-overview.png").stat().st_size > 0
    if os.environ.get("UPDATE_README_SCREENSHOT"):
        assert (ARTIFACTS / "journey-4-overview.png").read_bytes() == (
            README_SCREENSHOT.read_bytes())
