"""The trends page in a real browser (Debian's Chromium through Playwright): every chart is
drawn from its JSON, switching the range with htmx redraws them, and the console stays free
of errors, CSP violations included."""

from __future__ import annotations

import shutil
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from ledger.quarantine import quarantine_create
from runs.ingest import report_ingest, signals_ingest
from tests.helpers import body, measurement, record
from tests.test_trends import page_charts

CHROMIUM = shutil.which("chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed"),
]

DRAWN = """() => Array.from(document.querySelectorAll("canvas.chart")).map((canvas) => {
  const chart = Chart.getChart(canvas);
  return {
    source: canvas.dataset.chartSource,
    labels: chart ? chart.data.labels : null,
    datasets: chart ? chart.data.datasets.map((d) => ({label: d.label, data: d.data})) : null,
    width: canvas.width,
  };
})"""


SWAPPED = """() => {
  try {
    const canvases = Array.from(document.querySelectorAll("canvas.chart"));
    const verdicts = document.querySelector("canvas[data-chart-source=chart-verdicts]");
    return canvases.length > 0 && canvases.every((canvas) => Chart.getChart(canvas))
      && Object.keys(Chart.instances).length === canvases.length
      && document.querySelector(".range-summary").textContent.includes(": 7 days")
      && Chart.getChart(verdicts)?.data.labels.length > 0;
  } catch (error) {
    return false;  // caught mid-swap: ask again on the next frame
  }
}"""


# Each outcome series' colour as drawn, and the shades of the tones as the page styles them.
PAINTED = """() => {
  const style = getComputedStyle(document.documentElement);
  const shades = {};
  for (const tone of ["fail", "warn", "ok", "neutral"]) {
    shades[tone] = style.getPropertyValue(`--tone-${tone}-shades`).trim().split(/\\s+/);
  }
  const drawn = {};
  for (const canvas of document.querySelectorAll("canvas.chart")) {
    drawn[canvas.dataset.chartSource] = Chart.getChart(canvas).data.datasets.map(
      (d) => d.borderColor);
  }
  return {shades, drawn};
}"""


def _history(suite, today):
    nodes = [f"tests/test_b.py::test_{i}" for i in range(6)]
    for days_ago in range(12):
        now = timezone.now() - timedelta(days=days_ago)
        rows = [measurement(node, fails=(i + days_ago) % 4) for i, node in enumerate(nodes)]
        report_ingest(suite=suite, actor="ci", now=now, body=body(rows))
        locks = ["match", "drifted", "missing", "match", "match", "match"]
        records = [record(node, lock=locks[(i + days_ago) % 6], status="frozen" if i == 4
                          else "stable", prop="not_run" if i == 5 else "pass")
                   for i, node in enumerate(nodes)]
        signals_ingest(suite=suite, actor="ci", now=now, body=body(records))
    quarantine_create(suite=suite, nodeid=nodes[0], owner="@finley", evidence="ci/run-1",
                      expires=today + timedelta(days=9), actor="@finley", today=today,
                      imported=True)


def test_every_chart_is_drawn_and_htmx_redraws_them(live_server, client, suite, lead, today):
    from playwright.sync_api import sync_playwright

    _history(suite, today)
    client.force_login(lead)
    page_url = reverse("trends", args=[suite.slug])
    expected, _ = page_charts(client.get(page_url, {"range": "30"}).content.decode())
    expected_week, _ = page_charts(client.get(page_url, {"range": "7"}).content.decode())
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    problems = []

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": session,
                              "url": live_server.url}])
        page = context.new_page()
        page.route("**/favicon.ico", lambda route: route.fulfill(status=204, body=""))
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.goto(f"{live_server.url}{page_url}?range=30")
        page.wait_for_load_state("networkidle")
        drawn = page.evaluate(DRAWN)
        painted = page.evaluate(PAINTED)

        page.select_option("#id_range", "7")
        page.wait_for_url("**range=7**")
        # While htmx swaps the panel in, the new canvases have no charts yet and the old
        # charts are being destroyed (a destroyed chart's data throws): wait until every
        # canvas has its chart, the old ones are gone, and the week's panel is in.
        page.wait_for_function(SWAPPED)
        redrawn = page.evaluate(DRAWN)
        live_charts = page.evaluate("() => Object.keys(Chart.instances).length")
        browser.close()

    assert problems == []
    for before, specs in ((drawn, expected), (redrawn, expected_week)):
        assert {c["source"] for c in before} == {f"chart-{key}" for key in specs}
        for chart in before:
            spec = specs[chart["source"].removeprefix("chart-")]
            assert chart["width"] > 0
            assert chart["labels"] == spec["labels"]
            assert chart["datasets"] == [
                {"label": d["label"], "data": d["data"]} for d in spec["datasets"]
            ]
    assert live_charts == len(redrawn)
    # A series of an outcome is drawn in its tone's shade, read from the style sheet.
    shades = painted["shades"]
    for key, spec in expected.items():
        for dataset, color in zip(spec["datasets"], painted["drawn"][f"chart-{key}"],
                                  strict=True):
            if "tone" in dataset:
                assert color == shades[dataset["tone"]][dataset["shade"]], (key, dataset)


@contextmanager
def _signed_in(live_server, client, user, address: str):
    """A page of Chromium at ``address``, signed in as ``user``, loaded and idle."""
    from playwright.sync_api import sync_playwright

    client.force_login(user)
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
        context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": session,
                              "url": live_server.url}])
        page = context.new_page()
        page.goto(f"{live_server.url}{address}")
        page.wait_for_load_state("networkidle")
        try:
            yield page
        finally:
            browser.close()


def test_a_custom_day_can_be_typed_and_applies_on_enter(live_server, client, suite, lead,
                                                        today):
    """Typing a date digit by digit requests only the day typed. Each keystroke that
    completes a day hands it to the form; the years on the way (0002, 0020, 0202) are outside
    the input's min and never handed over; the form waits for the days to settle, so the
    days on the way are never requested. Enter applies the day, and the address holds just
    the range. (The form also applies the day once typing settles; whether that came before
    the Enter depends on the host's speed, so what is checked is what was requested, never
    when.)"""
    _history(suite, today)
    page_url = reverse("trends", args=[suite.slug])
    first = today - timedelta(days=20)
    with _signed_in(live_server, client, lead, f"{page_url}?range=custom") as page:
        asked = []
        page.on("request", lambda r: asked.append(r.url) if page_url in r.url else None)
        # Each day the script hands to the form to apply, as the form held it then.
        page.evaluate("""() => {
          window.applied = [];
          document.addEventListener("days-typed",
            (event) => window.applied.push(event.target.elements.from.value));
        }""")
        page.locator("#id_from").focus()  # the month, the first of its parts
        page.keyboard.type(first.strftime("%m%d%Y"), delay=40)
        applied = page.evaluate("() => window.applied")
        with page.expect_response(lambda r: page_url in r.url):
            page.keyboard.press("Enter")
        page.wait_for_url(f"**from={first.isoformat()}**")
        summary = page.locator(".range-summary").inner_text()
        address = page.url
    assert applied[-1] == first.isoformat()
    assert all(day.startswith(f"{first.year}-") for day in applied), applied
    assert asked and all(f"from={first.isoformat()}&" in url for url in asked), asked
    assert summary.startswith(f"{first.isoformat()} to {today.isoformat()}")
    assert address.endswith(f"?range=custom&from={first.isoformat()}&to={today.isoformat()}")


def test_a_form_just_swapped_in_submits_in_place(live_server, client, suite, lead):
    """A form the panel's swap has just put in the page is live at once: submitted in the
    same moment (as an Enter pressed then), htmx sends it and the address gets the range
    alone. With htmx's settle delay, the new form was still plain HTML then and the browser
    loaded it as a whole page, its every field in the address."""
    page_url = reverse("trends", args=[suite.slug])
    with _signed_in(live_server, client, lead, page_url) as page:
        loads = []
        page.on("request",
                lambda r: loads.append(r.url) if r.resource_type == "document" else None)
        # Submit the form the swap puts in, as soon as the swap has put it there.
        page.evaluate("""() => document.body.addEventListener("htmx:afterSwap", () => {
          setTimeout(() => document.querySelector(".range-form").requestSubmit(), 0);
        }, {once: true})""")
        with page.expect_response(lambda r: page_url in r.url) as first:
            page.select_option("#id_bucket", "week")
        with page.expect_response(lambda r: page_url in r.url) as second:
            pass
        page.wait_for_load_state("networkidle")
        address = page.url
        asked = [first.value.request, second.value.request]
    assert [request.headers.get("hx-request") for request in asked] == ["true", "true"]
    assert loads == []
    assert address.endswith(f"{page_url}?range=30&bucket=week")


# Each select of the trends form: its width on screen, and the width its longest option's
# text needs in the select's own font, with the select's padding and border.
SELECT_WIDTHS = """() => Array.from(document.querySelectorAll(".range-form select")).map((s) => {
  const style = getComputedStyle(s);
  const context = document.createElement("canvas").getContext("2d");
  context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
  const text = Math.max(...Array.from(s.options).map((o) => context.measureText(o.text).width));
  const frame = ["paddingLeft", "paddingRight", "borderLeftWidth", "borderRightWidth"]
    .reduce((sum, side) => sum + parseFloat(style[side]), 0);
  return {name: s.name, width: s.getBoundingClientRect().width, needs: text + frame};
})"""
# What Chromium draws at a select's end beside its text: the arrow.
ARROW = 16


@pytest.mark.parametrize("width", [1280, 390])
def test_each_select_of_the_form_shows_its_longest_option_whole(live_server, client, suite,
                                                                lead, width):
    """The Bucket select is as wide as "per day, per week beyond 90 days" (and the arrow
    beside it), on a desk; on a phone too, where the form still fits the screen."""
    from playwright.sync_api import sync_playwright

    client.force_login(lead)
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        context = browser.new_context(viewport={"width": width, "height": 900})
        context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": session,
                              "url": live_server.url}])
        page = context.new_page()
        page.goto(f"{live_server.url}{reverse('trends', args=[suite.slug])}")
        page.wait_for_load_state("networkidle")
        selects = page.evaluate(SELECT_WIDTHS)
        page_width = page.evaluate("() => document.documentElement.scrollWidth")
        browser.close()
    assert {s["name"] for s in selects} == {"range", "bucket"}
    for select in selects:
        assert select["width"] >= select["needs"] + ARROW, select
    assert page_width <= width
