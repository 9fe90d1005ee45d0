"""Journey 5, hostile content: node ids, owners, evidence, notes, commits and globs holding
<img onerror>, <script> and javascript: payloads are uploaded through the API and typed into
the forms; every page that shows them is opened. No dialog opens, no payload runs (each
would set window.__pwned), each payload is shown as the text it is, and a javascript:
evidence is never a link."""

from urllib.parse import urlencode

import pytest
from playwright.sync_api import expect

from ledger.models import QuarantineEntry
from ledger.tokens import token_create
from tests.conftest import PASSWORD

from .board import call_api

pytestmark = pytest.mark.browser

IMG = "<img src=x onerror=\"window.__pwned='img';alert('img')\">"
SCRIPT = "<script>window.__pwned='script';alert('script')</script>"
ATTRIBUTE = "\"><svg onload=\"window.__pwned='attr';alert('attr')\">"
JS = "javascript:window.__pwned='href';alert('href')//"
JS_MIXED = " JaVaScRiPt:window.__pwned='renew';alert('renew')"
LINKED = f"https://ci.example.com/runs/1?q={SCRIPT}"
OWNER = "javascript:alert(1)//@evil.example"

N_IMG = f"tests/test_xss.py::test_img[{IMG}]"
N_SCRIPT = f"tests/test_xss.py::test_script[{SCRIPT}]"
N_ATTRIBUTE = f"tests/test_xss.py::test_attr[{ATTRIBUTE}]"
N_JS = f"{JS}::test_js"
HOSTILE = [N_IMG, N_SCRIPT, N_ATTRIBUTE, N_JS]

# What no page of the board should hold, whatever it shows: a payload that ran, an inline
# event handler, an inline script, or a javascript: URL anywhere a URL goes.
INERT = """() => {
  const urls = ["href", "src", "action", "formaction", "xlink:href", "data", "poster"];
  const found = [];
  for (const element of document.querySelectorAll("*")) {
    for (const attribute of element.attributes) {
      if (attribute.name.startsWith("on")) {
        found.push(`${element.tagName} ${attribute.name}=${attribute.value}`);
      }
      if (urls.includes(attribute.name) && /^\\s*javascript:/i.test(attribute.value)) {
        found.push(`${element.tagName} ${attribute.name}=${attribute.value}`);
      }
    }
  }
  for (const link of document.querySelectorAll("a[href], area[href]")) {
    if (link.protocol === "javascript:") found.push(`link to ${link.href}`);
  }
  for (const script of document.querySelectorAll("script:not([src])")) {
    if (script.type !== "application/json") found.push(`inline script ${script.text}`);
  }
  return {
    pwned: window.__pwned === undefined ? null : String(window.__pwned),
    found: found,
    text: document.body.textContent,
  };
}"""


def _inert(board, *shown):
    """The page as it is now runs nothing hostile, and shows each of ``shown`` as text."""
    board.settle()
    page = board.page.evaluate(INERT)
    where = board.page.url
    assert page["pwned"] is None, f"a payload ran on {where}: {page['pwned']}"
    assert page["found"] == [], where
    for text in shown:
        assert text in page["text"], f"{text!r} is not shown as text on {where}"
    assert board.dialogs == [], where


def _visit(board, path, *shown):
    board.goto(path)
    _inert(board, *shown)


def _upload(board, suite):
    _, write = token_create(suite=suite, scope="write", actor="@lea", name="ci")
    rows = [{"nodeid": f"tests/test_steady.py::test_{i}", "n": 200, "fails": 0}
            for i in range(60)]
    rows += [{"nodeid": node, "n": 200, "fails": 9} for node in HOSTILE]
    report = call_api(
        board.base_url, "POST", f"/suites/{suite.slug}/reports", token=write,
        body={"measurements": rows, "commit": SCRIPT, "branch": IMG, "evidence": JS},
    )
    assert report.status == 201, report.json
    records = [{"node": node, "property_check": "fail", "fixture_lock": "match",
                "flake_status": "stable"} for node in HOSTILE]
    batch = call_api(
        board.base_url, "POST", f"/suites/{suite.slug}/verdicts", token=write,
        body={"records": records, "patch": SCRIPT, "commit": IMG, "evidence": JS},
    )
    assert batch.status == 201, batch.json
    return report.json, batch.json


def test_hostile_content_is_shown_as_text_and_never_runs(board, suite, owner, lead):
    report, batch = _upload(board, suite)
    page = board.page
    slug = suite.slug
    board.sign_in(owner.username, PASSWORD)
    _inert(board)

    board.nav("Reports")
    board.follow(page.get_by_role("link", name=f"#{report['id']}", exact=True))
    _inert(board, *HOSTILE, JS)
    row = page.get_by_role("row").filter(has_text=N_IMG)
    board.follow(row.get_by_role("link", name="Quarantine"))
    expect(page.get_by_label("Node id")).to_have_value(N_IMG)
    _inert(board)
    page.get_by_label("Owner").fill(IMG)
    page.get_by_label("Evidence", exact=True).fill(JS)
    page.get_by_label("Note").fill(f"{SCRIPT} {IMG}")
    board.submit(page.get_by_role("button", name="Quarantine", exact=True))
    expect(page.get_by_label("Owner")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Owner")).to_have_value(IMG)
    _inert(board)
    page.get_by_label("Owner").fill(OWNER)
    board.submit(page.get_by_role("button", name="Quarantine", exact=True))
    expect(page.get_by_role("heading", level=1)).to_have_text(N_IMG)
    _inert(board, N_IMG, JS, OWNER, SCRIPT, IMG)
    expect(page.get_by_role("link", name="javascript:")).to_have_count(0)

    board.nav("Ledger")
    board.follow(page.get_by_role("link", name="Quarantine a node"))
    page.get_by_label("Node id").fill(N_SCRIPT)
    page.get_by_label("Evidence", exact=True).fill(LINKED)
    page.get_by_label("Note").fill(ATTRIBUTE)
    board.submit(page.get_by_role("button", name="Quarantine", exact=True))
    expect(page.get_by_role("heading", level=1)).to_have_text(N_SCRIPT)
    expect(page.get_by_role("link", name=LINKED[:40])).to_have_attribute("href", LINKED)
    _inert(board, N_SCRIPT, LINKED, ATTRIBUTE)

    first, second = (QuarantineEntry.objects.get(node__nodeid=n) for n in (N_IMG, N_SCRIPT))
    board.nav("Ledger")
    _inert(board, N_IMG, N_SCRIPT, OWNER)
    page.locator(f"#entry-{first.pk}").get_by_role("link", name="Renew").click()
    form = page.locator(f"#entry-{first.pk}.editing")
    expect(form).to_contain_text(N_IMG)
    _inert(board)
    form.get_by_label("New evidence").fill(JS_MIXED)
    form.get_by_label("Note").fill(SCRIPT)
    board.submit(form.get_by_role("button", name="Renew"), in_place=True)
    expect(page.locator(f"#entry-{first.pk}").get_by_role("status")).to_contain_text("Renewed")
    _inert(board, N_IMG)
    page.locator(f"#entry-{second.pk}").get_by_role("link", name="Clear").click()
    form = page.locator(f"#entry-{second.pk}.editing")
    form.get_by_label("Why is it cleared?").fill(f"{IMG} {JS}")
    board.submit(form.get_by_role("button", name="Clear the entry"), in_place=True)
    expect(page.locator(f"#entry-{second.pk}").get_by_role("status")).to_contain_text("Cleared")
    _inert(board, N_SCRIPT)

    _visit(board, f"/suites/{slug}/", SCRIPT[:20])
    _visit(board, f"/suites/{slug}/ledger/?state=cleared", N_SCRIPT, LINKED[:40])
    _visit(board, f"/suites/{slug}/ledger/?{urlencode({'q': SCRIPT, 'owner': OWNER})}")
    expect(page.get_by_label("Search")).to_have_value(SCRIPT)
    expect(page.get_by_label("Owner", exact=True)).to_have_value(OWNER)  # the filter
    _visit(board, f"/suites/{slug}/ledger/{first.pk}/", N_IMG, JS_MIXED.strip(), SCRIPT, OWNER)
    _visit(board, f"/suites/{slug}/ledger/{second.pk}/", N_SCRIPT, LINKED, ATTRIBUTE, IMG, JS)
    _visit(board, f"/suites/{slug}/reports/", SCRIPT[:11])
    _visit(board, f"/suites/{slug}/verdicts/")
    board.page.goto(batch["url"])
    _inert(board, *HOSTILE, SCRIPT, IMG, JS)
    for node in HOSTILE:
        page.goto(report["url"])
        board.follow(page.get_by_role("row").filter(has_text=node).get_by_role(
            "link", name=node, exact=True))
        expect(page.get_by_role("heading", level=1)).to_contain_text(node)
        _inert(board, node)
    _visit(board, f"/suites/{slug}/trends/")

    board.sign_out()
    board.sign_in(lead.username, PASSWORD)
    board.nav("Settings")
    page.get_by_label("Tier", exact=True).select_option("2")
    glob = "tests/test_xss.py::*<script>*"
    page.get_by_label("Glob").fill(glob)
    expect(page.locator("#rule-preview")).to_contain_text(N_SCRIPT)
    _inert(board, glob, N_SCRIPT)
    board.submit(page.get_by_role("button", name="Add rule"))
    expect(page.get_by_role("status")).to_contain_text(f"Rule “{glob}” added.")
    _inert(board, glob)
    board.finish("journey-5-hostile-content")
